//! One small work queue for the compiler's parallel steps (loading, analyzing and assembling tools,
//! emitters, token counts), and batches of work under a size budget.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` over every job on every core, jobs taken in the given order (put the costliest first);
/// results come back in job order. A panic in `f` is passed on.
pub fn map_in_order<J: Sync, R: Send>(jobs: &[J], f: impl Fn(&J) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len().max(1));
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(k) else { break mine };
                        mine.push((k, f(job)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|(k, _)| *k);
    done.into_iter().map(|(_, r)| r).collect()
}

/// [`map_in_order`] over jobs taken by value (each is moved into `f` once).
pub fn map_owned_in_order<J: Send, R: Send>(jobs: Vec<J>, f: impl Fn(J) -> R + Sync) -> Vec<R> {
    let jobs: Vec<std::sync::Mutex<Option<J>>> = jobs
        .into_iter()
        .map(|j| std::sync::Mutex::new(Some(j)))
        .collect();
    map_in_order(&jobs, |job| {
        let job = job
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .expect("each job is taken once");
        f(job)
    })
}

/// `items` cut in order into runs whose sizes add up to at most `budget` (a larger item alone).
pub fn batches<T>(items: &[T], size: impl Fn(&T) -> u64, budget: u64) -> Vec<&[T]> {
    let mut out = Vec::new();
    let (mut start, mut total) = (0, 0u64);
    for (i, item) in items.iter().enumerate() {
        let n = size(item);
        if i > start && total.saturating_add(n) > budget {
            out.push(&items[start..i]);
            (start, total) = (i, 0);
        }
        total = total.saturating_add(n);
    }
    if start < items.len() {
        out.push(&items[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn batches_keep_order_and_stay_within_the_budget() {
        let sizes = [10u64, 20, 5, 40, 100, 1, 1, 30];
        let cut = super::batches(&sizes, |&n| n, 40);
        assert_eq!(
            cut,
            vec![&[10, 20, 5][..], &[40][..], &[100][..], &[1, 1, 30][..]]
        );
        assert_eq!(cut.concat(), sizes);
        assert!(super::batches(&[] as &[u64], |&n| n, 40).is_empty());
    }
}
