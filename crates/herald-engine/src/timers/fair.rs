//! Fair order between tenants: one tenant's backlog must not hold up
//! another's due timers.
//!
//! Inside a tenant, items keep the engine's urgency order (higher priority,
//! then earlier due, then lower id). Between tenants with queued items the
//! heap uses stride scheduling: each tenant has a *pass*; the tenant with the
//! smallest pass (lowest id on a tie) is served next, and serving one item
//! adds `1/weight` to its pass. A tenant that becomes active starts at the
//! current minimum pass, so time spent idle earns it no credit; it keeps what
//! it is ahead by (at most one stride), so emptying and refilling its lane
//! gains it nothing either. Over any stretch in which a set of tenants stays
//! backlogged, each is served within one item of `weight x` the advance of
//! the minimum pass; two tenants (or any number with equal weights) are
//! served within one item of their weight share of any window.
//!
//! With one tenant this is exactly a priority heap. Pure: no locks, no clock.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use herald_core::{Priority, TenantId, TimerId};

/// Anything ordered for dispatch: its urgency inside its tenant, and the
/// tenant it is fair to.
pub(crate) trait Urgency {
    fn key(&self) -> (Priority, i64, TimerId);
    fn tenant(&self) -> TenantId;
}

struct ByUrgency<T>(T);

impl<T: Urgency> PartialEq for ByUrgency<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}
impl<T: Urgency> Eq for ByUrgency<T> {}
impl<T: Urgency> PartialOrd for ByUrgency<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T: Urgency> Ord for ByUrgency<T> {
    /// Max-heap order: higher priority, then earlier due, then lower id.
    fn cmp(&self, other: &Self) -> Ordering {
        let (pa, da, ia) = self.0.key();
        let (pb, db, ib) = other.0.key();
        pa.cmp(&pb).then(db.cmp(&da)).then(ib.cmp(&ia))
    }
}

/// The pass one item costs at weight 1. A multiple of every weight up to 16
/// (lcm(1..=16) = 720720), so common weights have exact strides; larger
/// weights round by less than one part in 10^13.
const STRIDE_ONE: u128 = 720_720 << 24;

/// A lane keeps at most this much spare room once it empties (a drained
/// burst should not pin its memory).
const KEEP_CAPACITY: usize = 4_096;

/// The pass one item of a tenant of this weight costs (a weight of 0 counts as 1).
pub(crate) fn stride(weight: u32) -> u128 {
    STRIDE_ONE / u128::from(weight.max(1))
}

/// One tenant's queued items and its place in the rotation.
struct Lane<T> {
    heap: BinaryHeap<ByUrgency<T>>,
    pass: u128,
    stride: u128,
}

/// Priority heaps per tenant, served in weighted round-robin.
pub(crate) struct FairHeap<T> {
    lanes: HashMap<TenantId, Lane<T>>,
    /// Tenants with queued items by `(pass, tenant)`, next to serve first.
    /// A sorted vector: tenants are few, and a turn then allocates nothing.
    active: Vec<(u128, TenantId)>,
    /// The highest pass served so far: where a tenant joins when no active
    /// tenant is further on (all idle, or the rest skipped for their rate).
    served: u128,
    /// Weights by tenant; a tenant not listed weighs 1.
    weights: HashMap<TenantId, u32>,
    len: usize,
}

impl<T: Urgency> FairHeap<T> {
    pub fn new(weights: HashMap<TenantId, u32>) -> Self {
        Self {
            lanes: HashMap::new(),
            active: Vec::new(),
            served: 0,
            weights,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many items one tenant has queued.
    pub fn tenant_len(&self, tenant: TenantId) -> usize {
        self.lanes.get(&tenant).map_or(0, |l| l.heap.len())
    }

    /// The tenants with queued items, next to serve first.
    pub fn tenants(&self) -> impl Iterator<Item = TenantId> + '_ {
        self.active.iter().map(|&(_, t)| t)
    }

    pub fn push(&mut self, item: T) {
        let tenant = item.tenant();
        let joining = self.tenant_len(tenant) == 0;
        // Where a tenant joins: the current minimum pass, never behind what
        // was already served.
        let start = self
            .active
            .first()
            .map_or(self.served, |&(p, _)| p.max(self.served));
        let weights = &self.weights;
        let lane = self.lanes.entry(tenant).or_insert_with(|| Lane {
            heap: BinaryHeap::new(),
            pass: start,
            stride: stride(weights.get(&tenant).copied().unwrap_or(1)),
        });
        if joining {
            lane.pass = lane.pass.max(start);
            insert_sorted(&mut self.active, (lane.pass, tenant));
        }
        lane.heap.push(ByUrgency(item));
        self.len += 1;
    }

    /// The most urgent item of the first tenant in the rotation that
    /// `eligible` accepts. `eligible` is asked about tenants in rotation
    /// order and an accepted tenant is served at once, so a predicate that
    /// spends a budget (a rate token) spends it exactly for what it gets.
    pub fn pop_where(&mut self, mut eligible: impl FnMut(TenantId) -> bool) -> Option<T> {
        let at = self.active.iter().position(|&(_, t)| eligible(t))?;
        let (pass, tenant) = self.active.remove(at);
        let lane = self.lanes.get_mut(&tenant)?;
        let item = lane.heap.pop()?.0;
        self.len -= 1;
        self.served = self.served.max(pass);
        lane.pass = pass.saturating_add(lane.stride);
        if lane.heap.is_empty() {
            if lane.heap.capacity() > KEEP_CAPACITY {
                lane.heap.shrink_to(KEEP_CAPACITY);
            }
        } else {
            insert_sorted(&mut self.active, (lane.pass, tenant));
        }
        Some(item)
    }

    /// The next item in fair order.
    #[cfg(test)]
    pub fn pop(&mut self) -> Option<T> {
        self.pop_where(|_| true)
    }
}

fn insert_sorted(active: &mut Vec<(u128, TenantId)>, entry: (u128, TenantId)) {
    let at = active.partition_point(|e| *e < entry);
    active.insert(at, entry);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Item {
        tenant: TenantId,
        id: TimerId,
        due: i64,
        priority: Priority,
    }

    impl Urgency for Item {
        fn key(&self) -> (Priority, i64, TimerId) {
            (self.priority, self.due, self.id)
        }
        fn tenant(&self) -> TenantId {
            self.tenant
        }
    }

    fn item(tenant: u32, id: i64) -> Item {
        Item {
            tenant: TenantId(tenant),
            id,
            due: id,
            priority: 5,
        }
    }

    fn weights(w: &[(u32, u32)]) -> HashMap<TenantId, u32> {
        w.iter().map(|&(t, w)| (TenantId(t), w)).collect()
    }

    fn tenants_of(out: &[Item]) -> String {
        out.iter()
            .map(|i| char::from(b'A' - 1 + i.tenant.0 as u8))
            .collect()
    }

    fn drain(h: &mut FairHeap<Item>, n: usize) -> Vec<Item> {
        (0..n).map_while(|_| h.pop()).collect()
    }

    #[test]
    fn equal_weights_alternate() {
        let mut h = FairHeap::new(HashMap::new());
        for id in 0..6 {
            h.push(item(1, id));
        }
        for id in 100..103 {
            h.push(item(2, id));
        }
        assert_eq!(tenants_of(&drain(&mut h, 9)), "ABABABAAA");
        assert!(h.is_empty());
    }

    #[test]
    fn weight_three_to_one() {
        let mut h = FairHeap::new(weights(&[(1, 3)]));
        for id in 0..12 {
            h.push(item(1, id));
            h.push(item(2, 100 + id));
        }
        assert_eq!(tenants_of(&drain(&mut h, 16)), "ABAAABAAABAAABAA");
    }

    #[test]
    fn a_late_tenant_joins_at_the_current_minimum() {
        let mut h = FairHeap::new(HashMap::new());
        for id in 0..100 {
            h.push(item(1, id));
        }
        // A drains alone for a while: B's idle time earns it no credit.
        assert_eq!(tenants_of(&drain(&mut h, 50)), "A".repeat(50));
        for id in 1000..1004 {
            h.push(item(2, id));
        }
        assert_eq!(tenants_of(&drain(&mut h, 10)), "ABABABABAA");
    }

    #[test]
    fn a_late_tenant_is_served_before_the_backlog_ahead_of_it() {
        // B's timers are due after all of A's, yet go out at once.
        let mut h = FairHeap::new(HashMap::new());
        for id in 0..10_000 {
            h.push(item(1, id));
        }
        drain(&mut h, 10);
        h.push(item(2, 1_000_000));
        let next: Vec<i64> = drain(&mut h, 2).iter().map(|i| i.id).collect();
        assert_eq!(next, [10, 1_000_000]);
    }

    #[test]
    fn refilling_an_emptied_lane_earns_nothing() {
        // B pushes one item at a time; at weight 1 against A's 3 it still
        // gets one turn in four.
        let mut h = FairHeap::new(weights(&[(1, 3)]));
        for id in 0..100 {
            h.push(item(1, id));
        }
        let mut out = Vec::new();
        for n in 0..20 {
            if h.tenant_len(TenantId(2)) == 0 {
                h.push(item(2, 1000 + n));
            }
            out.extend(h.pop());
        }
        assert_eq!(tenants_of(&out), "ABAAABAAABAAABAAABAA");
    }

    #[test]
    fn a_skipped_tenant_keeps_its_place() {
        let mut h = FairHeap::new(HashMap::new());
        for id in 0..4 {
            h.push(item(1, id));
            h.push(item(2, 100 + id));
        }
        let a_only: Vec<Item> = (0..3)
            .filter_map(|_| h.pop_where(|t| t == TenantId(1)))
            .collect();
        assert_eq!(tenants_of(&a_only), "AAA");
        // B was passed over, not pushed back: it goes first once allowed.
        assert_eq!(tenants_of(&drain(&mut h, 5)), "BBBAB");
        assert_eq!(h.pop_where(|_| false), None);
    }

    #[test]
    fn skipping_every_tenant_takes_nothing() {
        let mut h = FairHeap::new(HashMap::new());
        h.push(item(1, 1));
        assert_eq!(h.pop_where(|_| false), None);
        assert_eq!(h.len(), 1);
        assert_eq!(h.tenants().collect::<Vec<_>>(), [TenantId(1)]);
    }

    /// What the heap is checked against: a plain list per tenant, sorted on
    /// every pop, and a linear scan for the smallest pass.
    struct Model {
        lanes: BTreeMap<TenantId, (Vec<Item>, u128)>,
        served: u128,
        weights: HashMap<TenantId, u32>,
    }

    impl Model {
        fn push(&mut self, it: Item) {
            let start = self
                .lanes
                .values()
                .filter(|(q, _)| !q.is_empty())
                .map(|&(_, p)| p)
                .min()
                .map_or(self.served, |p| p.max(self.served));
            let (q, pass) = self.lanes.entry(it.tenant).or_insert((Vec::new(), start));
            if q.is_empty() {
                *pass = (*pass).max(start);
            }
            q.push(it);
        }

        fn pop(&mut self) -> Option<Item> {
            let (&t, _) = self
                .lanes
                .iter()
                .filter(|(_, (q, _))| !q.is_empty())
                .min_by_key(|(t, (_, p))| (*p, **t))?;
            let w = self.weights.get(&t).copied().unwrap_or(1);
            let (q, pass) = self.lanes.get_mut(&t)?;
            q.sort_by_key(|i| (std::cmp::Reverse(i.priority), i.due, i.id));
            let it = q.remove(0);
            self.served = self.served.max(*pass);
            *pass += stride(w);
            Some(it)
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(Item),
        Pop(usize),
    }

    fn any_item(tenants: u32) -> impl Strategy<Value = Item> {
        (1..=tenants, 0i64..1_000, 0i64..50, 0u8..4).prop_map(|(t, id, due, priority)| Item {
            tenant: TenantId(t),
            id,
            due,
            priority,
        })
    }

    fn any_ops(tenants: u32) -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec(
            prop_oneof![
                3 => any_item(tenants).prop_map(Op::Push),
                1 => (1usize..8).prop_map(Op::Pop),
            ],
            0..300,
        )
    }

    /// Per tenant, counts of what `seq[a..b]` served.
    fn counts(seq: &[TenantId], a: usize, b: usize) -> HashMap<TenantId, usize> {
        let mut c = HashMap::new();
        for t in &seq[a..b] {
            *c.entry(*t).or_default() += 1;
        }
        c
    }

    /// Asserts every window of `seq` (all tenants backlogged throughout)
    /// serves each tenant within one item of its weight share.
    fn within_one_of_share(seq: &[TenantId], w: &HashMap<TenantId, u32>) {
        let total: u32 = w.values().sum();
        for a in 0..seq.len() {
            for b in a + 1..=seq.len() {
                let c = counts(seq, a, b);
                for (t, wt) in w {
                    let got = c.get(t).copied().unwrap_or(0) as f64;
                    let share = (b - a) as f64 * f64::from(*wt) / f64::from(total);
                    assert!(
                        (got - share).abs() <= 1.0,
                        "tenant {t} got {got} of window {a}..{b}, share {share:.2}"
                    );
                }
            }
        }
    }

    proptest! {
        #[test]
        fn one_tenant_is_a_plain_priority_heap(ops in any_ops(1)) {
            let mut h = FairHeap::new(HashMap::new());
            let mut model: Vec<Item> = Vec::new();
            for op in &ops {
                match op {
                    Op::Push(i) => { h.push(*i); model.push(*i); }
                    Op::Pop(n) => {
                        model.sort_by_key(|i| (std::cmp::Reverse(i.priority), i.due, i.id));
                        let want: Vec<Item> = model.drain(..(*n).min(model.len())).collect();
                        let got = drain(&mut h, *n);
                        prop_assert_eq!(
                            got.iter().map(|i| i.key()).collect::<Vec<_>>(),
                            want.iter().map(|i| i.key()).collect::<Vec<_>>()
                        );
                    }
                }
            }
            prop_assert_eq!(h.len(), model.len());
        }

        #[test]
        fn matches_the_model_and_loses_nothing(
            ops in any_ops(4),
            ws in prop::collection::vec(1u32..=6, 4),
        ) {
            let w: HashMap<TenantId, u32> =
                ws.iter().enumerate().map(|(i, w)| (TenantId(i as u32 + 1), *w)).collect();
            let mut h = FairHeap::new(w.clone());
            let mut model = Model { lanes: BTreeMap::new(), served: 0, weights: w };
            let mut got = Vec::new();
            let mut want = Vec::new();
            for op in &ops {
                match op {
                    Op::Push(i) => { h.push(*i); model.push(*i); }
                    Op::Pop(n) => {
                        got.extend(drain(&mut h, *n));
                        want.extend((0..*n).map_while(|_| model.pop()));
                    }
                }
            }
            let key = |i: &Item| (i.tenant, i.priority, i.due, i.id);
            prop_assert_eq!(got.iter().map(key).collect::<Vec<_>>(), want.iter().map(key).collect::<Vec<_>>());
            // Nothing lost or duplicated: what was popped plus what is left is what was pushed.
            got.extend(drain(&mut h, usize::MAX));
            let mut pushed: Vec<_> = ops.iter().filter_map(|o| match o { Op::Push(i) => Some(key(i)), _ => None }).collect();
            let mut out: Vec<_> = got.iter().map(key).collect();
            pushed.sort();
            out.sort();
            prop_assert_eq!(out, pushed);
        }

        #[test]
        fn urgency_holds_inside_each_tenant(ops in any_ops(3)) {
            // Each popped item is the most urgent its tenant had queued.
            let mut h = FairHeap::new(weights(&[(1, 2), (3, 5)]));
            let mut queued: HashMap<TenantId, Vec<Item>> = HashMap::new();
            let end = [Op::Pop(usize::MAX)];
            for op in ops.iter().chain(&end) {
                match op {
                    Op::Push(i) => {
                        h.push(*i);
                        queued.entry(i.tenant).or_default().push(*i);
                    }
                    Op::Pop(n) => {
                        for it in drain(&mut h, *n) {
                            let q = queued.entry(it.tenant).or_default();
                            let best = q.iter().copied().max_by(|a, b| ByUrgency(*a).cmp(&ByUrgency(*b)));
                            prop_assert_eq!(best.map(|b| b.key()), Some(it.key()));
                            let at = q.iter().position(|i| i == &it);
                            prop_assert!(at.is_some());
                            q.swap_remove(at.unwrap_or_default());
                        }
                    }
                }
            }
            prop_assert!(queued.values().all(Vec::is_empty));
        }

        #[test]
        fn two_backlogged_tenants_get_their_share_of_any_window(
            wa in 1u32..=16, wb in 1u32..=16, n in 1usize..80,
        ) {
            let w = weights(&[(1, wa), (2, wb)]);
            let mut h = FairHeap::new(w.clone());
            for id in 0..n as i64 {
                h.push(item(1, id));
                h.push(item(2, id));
            }
            // Both stay backlogged while n items go out.
            let seq: Vec<TenantId> = drain(&mut h, n).iter().map(|i| i.tenant).collect();
            within_one_of_share(&seq, &w);
        }

        #[test]
        fn equal_weights_share_any_window(tenants in 2u32..8, n in 1usize..60) {
            let w: HashMap<TenantId, u32> = (1..=tenants).map(|t| (TenantId(t), 1)).collect();
            let mut h = FairHeap::new(w.clone());
            for t in 1..=tenants {
                for id in 0..n as i64 {
                    h.push(item(t, id));
                }
            }
            let seq: Vec<TenantId> = drain(&mut h, n).iter().map(|i| i.tenant).collect();
            within_one_of_share(&seq, &w);
        }

        #[test]
        fn any_weights_stay_within_one_item_of_the_pass(
            ws in prop::collection::vec(1u32..=16, 2..6),
            late in prop::collection::vec((0usize..60, 0usize..6), 0..4),
            n in 1usize..120,
        ) {
            // Tenants (some joining late) with enough queued to stay
            // backlogged: between any two moments, each is served within
            // one item of its weight times the advance of the minimum pass.
            let w: HashMap<TenantId, u32> =
                ws.iter().enumerate().map(|(i, w)| (TenantId(i as u32 + 1), *w)).collect();
            let mut h = FairHeap::new(w.clone());
            let joins_late: HashMap<TenantId, usize> = late
                .iter()
                .filter(|(_, t)| *t < ws.len())
                .map(|&(at, t)| (TenantId(t as u32 + 1), at))
                .collect();
            for t in w.keys() {
                if !joins_late.contains_key(t) {
                    for id in 0..=n as i64 { h.push(item(t.0, id)); }
                }
            }
            let mut served: HashMap<TenantId, Vec<usize>> = HashMap::new();
            let mut mins = Vec::new();
            for step in 0..n {
                for (t, at) in &joins_late {
                    if *at == step {
                        for id in 0..=n as i64 { h.push(item(t.0, id)); }
                    }
                }
                mins.push(h.active.first().map_or(0, |&(p, _)| p));
                if let Some(it) = h.pop() {
                    served.entry(it.tenant).or_default().push(step);
                }
            }
            mins.push(h.active.first().map_or(0, |&(p, _)| p));
            for (t, wt) in &w {
                let from = joins_late.get(t).copied().unwrap_or(0).min(n);
                let steps = served.get(t).cloned().unwrap_or_default();
                for a in from..=n {
                    for b in a..=n {
                        let got = steps.iter().filter(|s| (a..b).contains(*s)).count() as f64;
                        let due = (mins[b] - mins[a]) as f64 / stride(*wt) as f64;
                        prop_assert!(
                            (got - due).abs() <= 1.0 + 1e-9,
                            "tenant {} got {} in {}..{}, pass advance worth {:.2}", t, got, a, b, due
                        );
                    }
                }
            }
        }
    }
}
