//! Work spread over the machine's cores: CPU-bound start-up work that splits by item (the
//! kept lists of many lazy servers, parsed and then built into the catalogue).

/// `f` of every item, in order, the items split into one slice per core (scoped threads;
/// one item or one core: on this thread). A panic in `f` is resumed here.
pub(crate) fn map_on_cores<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_item_once_in_order() {
        let items: Vec<u32> = (0..1001).collect();
        let doubled = super::map_on_cores(&items, |i| i * 2);
        assert_eq!(doubled, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert!(super::map_on_cores(&[] as &[u32], |i| *i).is_empty());
    }
}
