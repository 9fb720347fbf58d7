# The real libdb's source for impls/libdb's build script (the libdb tests, `isolation --libdb`,
# the libdb conformance targets): LOADBEARING_LIBDB_SRC names the 5.3.34 tarball. CI takes it
# from the shared reference material next to the checkout; the source is never copied into the
# repository. The build needs a C toolchain, make and patch. Sourced by .ci/run.
if [ -z "${LOADBEARING_LIBDB_SRC:-}" ]; then
  for candidate in \
    "$PWD/../shared/reference/libdb/libdb-5.3.34-c4811dc.tar.gz" \
    "/work/shared/reference/libdb/libdb-5.3.34-c4811dc.tar.gz"; do
    if [ -f "$candidate" ]; then
      LOADBEARING_LIBDB_SRC="$(cd "$(dirname "$candidate")" && pwd)/$(basename "$candidate")"
      break
    fi
  done
fi
if [ -z "${LOADBEARING_LIBDB_SRC:-}" ] || [ ! -e "$LOADBEARING_LIBDB_SRC" ]; then
  echo "LOADBEARING_LIBDB_SRC is not set and no libdb-5.3.34-c4811dc.tar.gz is in ../shared/reference/libdb/ (docs/libdb.md)" >&2
  exit 1
fi
export LOADBEARING_LIBDB_SRC
echo "libdb source: $LOADBEARING_LIBDB_SRC"
for tool in cc make patch ar ld objcopy tar; do
  command -v "$tool" >/dev/null || { echo "the libdb build needs $tool" >&2; exit 1; }
done
