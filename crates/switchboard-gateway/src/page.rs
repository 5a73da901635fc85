//! Pages of the served lists (`tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list`) for catalogues larger than one page.
//!
//! A list that fits one page is answered whole, in the catalogue's order, without a cursor.
//! A longer one is served in the order of each item's key (qualified name, gateway URI or URI
//! template), [`PAGE_SIZE`] items a page; the cursor names the last key sent and how many
//! items with that key were sent (keys may repeat), so the next page starts right after it
//! even when the list changed in between: a client following cursors gets every item that
//! stayed exactly once (and hears of the change through `list_changed`).

use rmcp::ErrorData;
use serde_json::json;

/// The most items a page holds.
pub const PAGE_SIZE: usize = 500;

/// One page of `items` after `cursor`, and the cursor of the next page when there is one.
pub(crate) fn page<T>(
    items: Vec<T>,
    key: impl Fn(&T) -> &str,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorData> {
    let size = size.max(1);
    if cursor.is_none() && items.len() <= size {
        return Ok((items, None));
    }
    let last = match cursor {
        None => None,
        Some(cursor) => Some(decode(cursor).ok_or_else(|| {
            ErrorData::invalid_params(format!("`{cursor}` is not a cursor of this list"), None)
        })?),
    };
    // The items stay where they are; their positions are sorted by key (items can be large,
    // and a listing may hold thousands).
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|a, b| key(&items[*a]).cmp(key(&items[*b])));
    let key_at = |i: usize| key(&items[order[i]]);
    let start = match &last {
        None => 0,
        Some((last, sent)) => {
            let first_equal = order.partition_point(|i| key(&items[*i]) < last.as_str());
            let after_equal = order.partition_point(|i| key(&items[*i]) <= last.as_str());
            first_equal.saturating_add(*sent).min(after_equal)
        }
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| {
        let last = key_at(end - 1);
        // Items with the last key sent so far, on this page and before it.
        let first_equal = order.partition_point(|i| key(&items[*i]) < last);
        encode(last, end - first_equal)
    });
    let mut wanted = vec![None; items.len()];
    for (rank, &i) in order[start..end].iter().enumerate() {
        wanted[i] = Some(rank);
    }
    let mut page: Vec<(usize, T)> = Vec::with_capacity(end - start);
    for (item, rank) in items.into_iter().zip(wanted) {
        if let Some(rank) = rank {
            page.push((rank, item));
        }
    }
    page.sort_unstable_by_key(|(rank, _)| *rank);
    Ok((page.into_iter().map(|(_, item)| item).collect(), next))
}

fn encode(last: &str, sent: usize) -> String {
    json!([last, sent]).to_string()
}

fn decode(cursor: &str) -> Option<(String, usize)> {
    let (last, sent): (String, usize) = serde_json::from_str(cursor).ok()?;
    Some((last, sent))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn follow(items: &[&str], size: usize) -> Vec<String> {
        let list: Vec<String> = items.iter().map(|s| s.to_string()).collect();
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..100 {
            let (page, next) = page(list.clone(), |s| s.as_str(), cursor.as_deref(), size).unwrap();
            assert!(page.len() <= size);
            all.extend(page);
            match next {
                Some(next) => cursor = Some(next),
                None => return all,
            }
        }
        panic!("the cursors never ended");
    }

    #[test]
    fn every_item_exactly_once_even_with_repeated_keys() {
        let items = ["d", "a", "c", "b", "b", "b", "e", "a", "f"];
        for size in 1..=10 {
            let mut got = follow(&items, size);
            let mut want: Vec<String> = items.iter().map(|s| s.to_string()).collect();
            got.sort();
            want.sort();
            assert_eq!(got, want, "page size {size}");
        }
        // One page: as listed, no cursor.
        assert_eq!(follow(&["b", "a"], 5), ["b", "a"]);
    }

    #[test]
    fn a_change_between_pages_never_repeats_an_item() {
        let before = vec!["a", "b", "c", "d"];
        let (first, next) = page(before, |s| *s, None, 2).unwrap();
        assert_eq!(first, ["a", "b"]);
        // `a` went and `0` came before the cursor: the next page starts after `b` still.
        let after = vec!["0", "c", "b", "d"];
        let (second, next) = page(after, |s| *s, next.as_deref(), 2).unwrap();
        assert_eq!(second, ["c", "d"]);
        assert_eq!(next, None);
        assert!(page(vec!["a"], |s| *s, Some("nonsense"), 2).is_err());
    }
}
