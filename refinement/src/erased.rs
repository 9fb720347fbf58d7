//! A report behind a face that does not name its model, for callers that hold many models at
//! once (the suite's tables, JSON, traces, docs, guard mutation, benchmarks). The verdict and
//! its numbers are data; the paths are shown through the model the first time they are asked
//! for; a caller that knows the model takes the typed report back with [`typed`](AnyReport).

use std::any::Any;
use std::sync::{Arc, OnceLock};

use crate::report::{Outcome, ReportOf};
use crate::shown::ShownPath;
use crate::spec::Spec;

/// A check's report, whatever its model.
pub trait AnyReport: Send + Sync {
    /// The type name of the model that was checked.
    fn model_name(&self) -> &'static str;
    fn outcome(&self) -> &Outcome;
    fn distinct_states(&self) -> u64;
    /// States generated, those already seen included (TLC's count).
    fn generated(&self) -> u64;
    fn depth(&self) -> usize;
    fn seconds(&self) -> f64;
    fn properties_checked(&self) -> &[String];
    /// Peak bytes held by the visited set.
    fn visited_bytes(&self) -> usize;
    /// Bytes held by the liveness graph, when the check built one.
    fn graph_bytes(&self) -> usize;
    /// With `Options::every_temporal`: every temporal property violated, with its
    /// counterexample's length.
    fn temporal_violations(&self) -> &[(String, usize)];
    /// For a search by orbits: the orbits searched, which stand for the states counted.
    fn orbits(&self) -> Option<u64>;
    /// The counterexample as people read it.
    fn counterexample(&self) -> Option<&ShownPath>;
    /// The `sometimes` witnesses found, as people read them.
    fn witnesses(&self) -> &[ShownPath];
    /// The report with its model, for [`typed`](AnyReport) and [`model`](AnyReport).
    fn as_any(&self) -> &dyn Any;
}

impl dyn AnyReport + '_ {
    /// The typed report, when `M` is the model that was checked.
    pub fn typed<M: Spec + 'static>(&self) -> Option<&ReportOf<M>> {
        self.as_any()
            .downcast_ref::<Erased<M>>()
            .map(|erased| &erased.report)
    }

    /// The model that was checked, when it is an `M`.
    pub fn model<M: Spec + 'static>(&self) -> Option<&M> {
        self.as_any()
            .downcast_ref::<Erased<M>>()
            .map(|erased| erased.model.as_ref())
    }
}

/// Hides `report`'s model behind [`AnyReport`]; `model` is the one that was checked, kept to
/// show the report's paths.
pub fn erase<M: Spec + 'static>(model: Arc<M>, report: ReportOf<M>) -> Box<dyn AnyReport> {
    Box::new(Erased {
        model,
        report,
        counterexample: OnceLock::new(),
        witnesses: OnceLock::new(),
    })
}

struct Erased<M: Spec> {
    model: Arc<M>,
    report: ReportOf<M>,
    counterexample: OnceLock<Option<ShownPath>>,
    witnesses: OnceLock<Vec<ShownPath>>,
}

impl<M: Spec + 'static> AnyReport for Erased<M> {
    fn model_name(&self) -> &'static str {
        std::any::type_name::<M>()
    }

    fn outcome(&self) -> &Outcome {
        &self.report.outcome
    }

    fn distinct_states(&self) -> u64 {
        self.report.distinct_states
    }

    fn generated(&self) -> u64 {
        self.report.generated
    }

    fn depth(&self) -> usize {
        self.report.depth
    }

    fn seconds(&self) -> f64 {
        self.report.seconds
    }

    fn properties_checked(&self) -> &[String] {
        &self.report.properties_checked
    }

    fn visited_bytes(&self) -> usize {
        self.report.visited_bytes
    }

    fn graph_bytes(&self) -> usize {
        self.report.graph_bytes
    }

    fn temporal_violations(&self) -> &[(String, usize)] {
        &self.report.temporal_violations
    }

    fn orbits(&self) -> Option<u64> {
        self.report.orbits
    }

    fn counterexample(&self) -> Option<&ShownPath> {
        self.counterexample
            .get_or_init(|| {
                self.report
                    .counterexample
                    .as_ref()
                    .map(|cx| ShownPath::of(self.model.as_ref(), cx))
            })
            .as_ref()
    }

    fn witnesses(&self) -> &[ShownPath] {
        self.witnesses.get_or_init(|| {
            self.report
                .witnesses
                .iter()
                .map(|w| ShownPath::of(self.model.as_ref(), w))
                .collect()
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
