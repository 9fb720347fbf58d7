//! Work that runs once on each thread of the pool: the liveness search's walks.

use crate::progress::Ticker;

/// Runs `walk(walker, walkers, progress)` once on each thread of the pool: walker 0 on this
/// thread, with the progress line, the others without. Returns walker 0's result.
pub(crate) fn one_walk_a_thread<T: Send>(
    progress: &mut Option<Ticker>,
    walk: impl Fn(usize, usize, &mut Option<Ticker>) -> T + Sync,
) -> T {
    let walkers = rayon::current_num_threads().max(1);
    rayon::scope(|scope| {
        for walker in 1..walkers {
            let walk = &walk;
            scope.spawn(move |_| {
                walk(walker, walkers, &mut None);
            });
        }
        walk(0, walkers, progress)
    })
}

/// Runs `run` in a pool of `threads` threads.
#[cfg(test)]
pub(crate) fn in_pool<T: Send>(threads: usize, run: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a pool")
        .install(run)
}
