//! Real implementations of the designs the models describe, instrumented to emit step traces.
