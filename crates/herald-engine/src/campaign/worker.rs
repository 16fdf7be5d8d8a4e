//! A segment worker: claims a segment, sends to its recipients, records each
//! outcome, and stops the moment its claim is no longer good.
//!
//! Sends run `worker_concurrency` at a time within the channel's rate limit.
//! Nothing at or above the segment's mark (`sent_to`, in the store) is sent,
//! and the mark runs ahead of the sends by the doubt window
//! (`jobs.doubt_window`): recipients in flight, answered but not yet written,
//! or marked and not yet sent, together never more than the window. A crash
//! therefore leaves at most the window in doubt (sent, perhaps, with no
//! outcome recorded); whoever takes the segment next resolves them first, by
//! the channel's `in_doubt` choice. A send's slot is free again when its
//! answer arrives: answers are written in batches (half the window, at most
//! `record_every`), one write at a time, group committed with the other
//! workers' (`Shared::writes`), and at least every third of the lease. Each
//! write moves the cursor to the lowest index not yet finished, extends the
//! lease, and raises the mark as far as the window allows, before the sends
//! it allows leave; a write goes early when the marked stretch runs low, so
//! sends do not wait on a commit while the window has room.
//!
//! Every send first checks that the lease still covers it, so a worker that
//! stalled past its lease (and whose segment the sweeper has re-issued)
//! sends nothing more. What it did send is still written to the send log,
//! which is what keeps a re-issue from sending it again.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use herald_channels::InDoubt;
use herald_channels::{Delivery, QuietPolicy, SendOutcome};
use herald_core::TimerKind;
use herald_core::campaign::{SendState, job_recipient_key};
use herald_core::timer::Routing;
use herald_store::{
    ClaimedSegment, CompletionOutcome, JobRecord, LeaseCheck, Progress, SegmentClaim,
    SegmentRecord, SegmentWrite, SendEntry, Unsendable,
};
use tokio::time::Instant;

use super::directory::{self, Directory, Resolved};
use super::{CampaignConfig, Shared};
use crate::channels::copies;
use crate::channels::runtime::ChannelRuntime;
use crate::observe::live::{LiveEntry, LiveOutcome};
use crate::observe::trace;

/// The worker loop: claim, send, repeat; nap when there is nothing to claim.
pub(super) async fn run(sh: Arc<Shared>, n: usize) {
    let owner = format!("{}/w{n}", sh.holder.node_id);
    while !sh.stop.is_stopped() {
        let now = sh.clock.now_ms();
        let cfg = sh.cfg.get();
        // The claim marks the first stretch of the window, so the first
        // sends wait for no write of their own (never more than the window:
        // a batching channel's window is only wider).
        match sh
            .store
            .claim_segment_ahead(&owner, now, cfg.lease_ms, cfg.doubt_window.max(1))
            .await
        {
            Ok(Some(claimed)) => run_segment(&sh, claimed).await,
            Ok(None) => sh.nap(&sh.work, sh.cfg.get().idle_poll_ms).await,
            Err(e) => {
                tracing::warn!(error = %e, worker = %owner, "claiming a segment failed");
                sh.nap(&sh.work, sh.cfg.get().idle_poll_ms).await;
            }
        }
    }
}

/// Most workers' writes one commit carries (`Shared::writes`).
const WRITES_PER_COMMIT: usize = 64;

/// The error an in-doubt recipient that was not sent again ends with.
const IN_DOUBT: &str = "in doubt: handed to the provider by a node that died before recording the answer; not sent again (in_doubt = \"skip\")";

/// A write under way: its answer and what it wrote.
type Pending<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<(i64, Progress)>> + Send + 'a>>;

/// Why a send did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skip {
    /// The claim no longer covers a send (stalled, or about to expire).
    Lease,
    /// The job's deadline has passed.
    Deadline,
}

/// Sends one segment as far as its claim allows. In phases: read what the
/// segment needs ([`read_slice`]), size the work ([`Pace`]), then loop:
/// start groups of sends as the window allows ([`Walk::fill`]), write what
/// was answered one write at a time ([`Walk::write_now`]), take in answers
/// and writes; finally record the rest and finish the segment
/// ([`finish`]).
async fn run_segment(sh: &Shared, claimed: ClaimedSegment) {
    let ClaimedSegment {
        claim,
        segment,
        mut job,
        lease_until,
    } = claimed;
    let run = segment_span(&mut job, &segment);
    let span = tracing::debug_span!(
        "segment",
        job = job.id,
        segment = segment.id,
        start = segment.start,
        end = segment.end
    );
    let _enter = span.enter();
    let Some(rt) = sh.channels.get(&job.channel).cloned() else {
        // Every node should carry the same channels; one that lacks this one
        // lets the claim lapse so that a node that has it takes the segment.
        tracing::error!(job = job.id, channel = %job.channel, "job names a channel this node does not have; leaving its segment");
        return;
    };
    let Some(slice) = read_slice(sh, &job, &segment, rt.in_doubt()).await else {
        return;
    };
    let lease = AtomicI64::new(lease_until);
    let pace = Pace::of(&sh.cfg.get(), rt.concurrency(), rt.channel().max_batch());
    let mut walk = Walk::new(slice.from, segment.end, segment.sent_to);
    let mut sends = FuturesUnordered::new();
    let mut writing: Option<Pending<'_>> = None;
    let mut last_record = Instant::now();

    loop {
        while !walk.halted && sends.len() < pace.conc && walk.next < walk.end {
            let group = walk.fill(&slice, pace.batch);
            if group.is_empty() {
                break;
            }
            sends.push(send_group(sh, &rt, &job, &lease, slice.dir.as_ref(), group));
        }
        if sh.stop.is_stopped() {
            walk.halted = true;
        }
        // One write at a time: what has been answered, the cursor, and how far
        // the window lets sends go next. Sends go on under the mark while it
        // commits; answers that come meanwhile wait for the next one.
        if writing.is_none() {
            let due = last_record.elapsed() >= pace.record_period;
            if let Some((at, batch)) = walk.write_now(&pace, due, sends.is_empty()) {
                writing = Some(Box::pin(record(sh, &claim, at, batch)));
                last_record = Instant::now();
            }
        }
        if sends.is_empty() && writing.is_none() && walk.finished() {
            break;
        }
        tokio::select! {
            done = sends.next(), if !sends.is_empty() => {
                for (idx, result) in done.into_iter().flatten() {
                    if walk.answered(idx, result) == Some(Skip::Lease) {
                        tracing::warn!(job = job.id, segment = segment.id, "claim no longer covers a send; stopping");
                    }
                }
            }
            written = async {
                match writing.as_mut() {
                    Some(w) => w.await,
                    None => std::future::pending().await,
                }
            }, if writing.is_some() => {
                writing = None;
                if let Some(until) = walk.written(written) {
                    lease.store(until, Ordering::SeqCst);
                }
            }
            _ = tokio::time::sleep_until(last_record + pace.record_period) => {}
        }
    }
    let outcome = finish(sh, &claim, &job, &segment, &slice, walk, &lease).await;
    if !run.is_disabled() {
        run.record("herald.outcome", outcome);
    }
}

/// The span of one claim of a segment, linked to the request that created
/// its job (a job runs long, in many segments, so each run is a trace of
/// its own rather than a child of the request). With export on, the job's
/// sends carry the run's context as their `traceparent` (webhooks send it
/// on); with export off they carry the job's stored one, as timers do.
fn segment_span(job: &mut JobRecord, segment: &SegmentRecord) -> tracing::Span {
    let run = tracing::info_span!(
        target: trace::TARGET,
        parent: None,
        "send segment",
        herald.job.id = job.id,
        herald.segment.id = segment.id,
        herald.segment.start = segment.start,
        herald.segment.end = segment.end,
        herald.attempt = segment.attempt,
        herald.channel = job.channel.as_str(),
        herald.outcome = tracing::field::Empty,
    );
    if !run.is_disabled() {
        trace::add_link(&run, job.traceparent.as_deref());
        if let Some(own) = trace::traceparent_of(&run) {
            job.traceparent = Some(own);
        }
    }
    run
}

/// What sending a segment needs besides its claim: its recipients, their
/// directory entries (a job with `to`), the send log's earlier outcomes,
/// and the part a dead holder left in doubt with the channel's choice for it.
struct Slice {
    /// The segment's cursor when claimed: `recipients[0]` is at this index.
    from: u64,
    recipients: Vec<String>,
    dir: Option<Directory>,
    /// State and attempts by index, from earlier claims.
    prior: HashMap<u64, (SendState, u32)>,
    doubt: std::ops::Range<u64>,
    policy: InDoubt,
}

/// Reads a segment's recipients, their directory entries and its send log;
/// `None` if the store fails (the claim then lapses).
async fn read_slice(
    sh: &Shared,
    job: &JobRecord,
    segment: &SegmentRecord,
    policy: InDoubt,
) -> Option<Slice> {
    let from = segment.cursor;
    let recipients = match sh
        .store
        .audience_slice(job.audience_id, from, segment.end)
        .await
    {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, job = job.id, "reading the segment's recipients failed; its lease will lapse");
            return None;
        }
    };
    // A job with `to`: its users' directory entries, read once per claim.
    let dir = match Directory::read(sh.store.as_ref(), job, &recipients).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, job = job.id, "reading the segment's subscribers failed; its lease will lapse");
            return None;
        }
    };
    let prior: HashMap<u64, (SendState, u32)> = match sh
        .store
        .job_sends(job.id, from, segment.end)
        .await
    {
        Ok(rows) => rows
            .into_iter()
            .map(|r| (r.index, (r.state, r.attempts)))
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, job = job.id, "reading the send log failed; its lease will lapse");
            return None;
        }
    };
    let mut dir = dir;
    if let Some(d) = dir.as_mut() {
        // Frequency caps: the users still to send to, in one store call.
        let rules = sh.cfg.get().caps.clone();
        let to_send: Vec<&str> = recipients
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                prior
                    .get(&(from + *i as u64))
                    .is_none_or(|(s, _)| *s == SendState::Retry)
            })
            .map(|(_, u)| u.as_str())
            .filter(|u| !u.is_empty())
            .collect();
        let now = sh.clock.now_ms();
        if let Err(e) = d
            .take_caps(sh.store.as_ref(), job, &to_send, &rules, now)
            .await
        {
            tracing::warn!(error = %e, job = job.id, "taking frequency caps failed; its lease will lapse");
            return None;
        }
    }
    Some(Slice {
        from,
        recipients,
        dir,
        prior,
        doubt: (segment.doubt_from.max(from))..segment.doubt_to.min(segment.end),
        policy,
    })
}

/// How a worker paces one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pace {
    /// Provider calls in flight at once.
    conc: usize,
    /// Recipients per provider call.
    batch: usize,
    /// Most outcomes one write carries.
    per_write: usize,
    /// Answers waiting that make a write go: half the window, at most
    /// `per_write`, so sends go on under the other half while it commits.
    write_at: usize,
    /// A write goes to raise the mark once fewer marked recipients than this
    /// are left to send (a quarter of the window).
    low_mark: u64,
    /// Longest between writes (a third of the lease).
    record_period: Duration,
    /// Recipients that may be out without a recorded outcome: in flight,
    /// answered but not yet written, or marked (`sent_to`) and not yet sent.
    /// A crash leaves at most this many in doubt.
    window: u64,
}

impl Pace {
    /// The pace for `[jobs]` settings `cfg` on a channel of `concurrency`
    /// whose calls take up to `max_batch` recipients.
    fn of(cfg: &CampaignConfig, concurrency: usize, max_batch: usize) -> Self {
        let conc = cfg.worker_concurrency.min(concurrency).max(1);
        let per_write = cfg.record_every.max(1);
        let record_period = Duration::from_millis((cfg.lease_ms / 3).max(50) as u64);
        // A provider that takes many recipients per call (WeCom: 1000) gets them
        // in one call; in-flight calls are then bounded by the channel's concurrency.
        let batch = max_batch.max(1);
        let (conc, window) = if batch > 1 {
            // Its calls are cut at the mark, so the window holds at least
            // every call in flight at full size.
            let conc = concurrency.clamp(1, conc);
            let full = (conc as u64).saturating_mul(batch as u64);
            (conc, cfg.doubt_window.max(full))
        } else {
            (conc, cfg.doubt_window.max(1))
        };
        Self {
            conc,
            batch,
            per_write,
            write_at: per_write.min((window / 2).max(1) as usize),
            low_mark: (window / 4).max(1),
            record_period,
            window,
        }
    }
}

/// Where sending a segment stands, in memory.
#[derive(Debug)]
struct Walk {
    /// The segment's cursor when claimed.
    from: u64,
    /// The segment's end (exclusive).
    end: u64,
    /// The next index to look at.
    next: u64,
    /// Everything below `marked` may be sent: the store has it as `sent_to`.
    marked: u64,
    in_flight: BTreeSet<u64>,
    /// The lowest index whose send was skipped (lease or deadline).
    skipped: Option<u64>,
    /// Outcomes answered (or settled) and not yet written.
    entries: Vec<SendEntry>,
    /// No more sends start: stopping, or a send was skipped.
    halted: bool,
    /// The claim is lost, or a write failed: nothing more is written.
    lost: bool,
    /// Recipients a dead holder left in doubt that came up again.
    resolving: u64,
}

impl Walk {
    /// A walk from the cursor `from` to `end` of a segment the store has
    /// marked up to `sent_to`.
    fn new(from: u64, end: u64, sent_to: u64) -> Self {
        Self {
            from,
            end,
            next: from,
            marked: sent_to.clamp(from, end),
            in_flight: BTreeSet::new(),
            skipped: None,
            entries: Vec::new(),
            halted: false,
            lost: false,
            resolving: 0,
        }
    }

    /// The next group to send, up to `batch` recipients below `marked`:
    /// recipients already final are passed over, and those left in doubt
    /// end in doubt unsent on a channel that skips them. Empty when the
    /// next recipient waits for a mark, or the segment is through.
    fn fill(&mut self, slice: &Slice, batch: usize) -> Vec<(u64, String, u32)> {
        let mut group: Vec<(u64, String, u32)> = Vec::new();
        while group.len() < batch && self.next < self.end {
            let idx = self.next;
            let attempt = match slice.prior.get(&idx) {
                Some((state, _)) if state.is_final() => {
                    self.next += 1;
                    continue;
                }
                Some((_, attempts)) => attempts + 1,
                None => 1,
            };
            let recipient = slice
                .recipients
                .get((idx - slice.from) as usize)
                .cloned()
                .unwrap_or_default();
            if slice.doubt.contains(&idx) {
                self.resolving += 1;
                if slice.policy == InDoubt::Skip {
                    // Not sent again: it ends in doubt, for an operator.
                    self.next += 1;
                    self.entries.push(entry(
                        idx,
                        recipient,
                        SendState::InDoubt,
                        None,
                        Some(IN_DOUBT.into()),
                    ));
                    continue;
                }
            }
            if idx >= self.marked {
                break;
            }
            self.next += 1;
            self.in_flight.insert(idx);
            group.push((idx, recipient, attempt));
        }
        group
    }

    /// The write to make now, if any (none while the claim is lost): the
    /// outcomes answered (at most `per_write`), the cursor below everything
    /// not yet recorded, and `sent_to` as far as the window allows. A write
    /// goes when one is `due`, when half the window's answers wait, when the
    /// marked stretch ahead of the sends runs low, or when nothing is in
    /// flight (`sends_idle`) and there is something to write.
    fn write_now(
        &mut self,
        pace: &Pace,
        due: bool,
        sends_idle: bool,
    ) -> Option<(Progress, Vec<SendEntry>)> {
        if self.lost {
            return None;
        }
        let take = self.entries.len().min(pace.per_write);
        // Out without a recorded outcome once this write commits: what is
        // in flight and the answers it leaves for the next one; the rest
        // of the window may be marked ahead of `next`.
        let out = (self.in_flight.len() + self.entries.len() - take) as u64;
        let room = pace.window.saturating_sub(out);
        let sent_to = if self.halted {
            self.marked
        } else {
            self.next
                .saturating_add(room)
                .min(self.end)
                .max(self.marked)
        };
        let low = self.marked.saturating_sub(self.next) < pace.low_mark;
        let mark = sent_to > self.marked && (sends_idle || low);
        let answers = self.entries.len() >= pace.write_at || (sends_idle && take > 0);
        if !(due || answers || mark) {
            return None;
        }
        let batch: Vec<SendEntry> = self.entries.drain(..take).collect();
        // Outcomes left for the next write are not recorded yet.
        let cursor = self
            .entries
            .iter()
            .map(|e| e.index)
            .fold(self.cursor(), u64::min);
        Some((Progress { cursor, sent_to }, batch))
    }

    /// Whether the loop is over once nothing is in flight or being written:
    /// the claim is lost, or nothing is left to send or to write.
    fn finished(&self) -> bool {
        let more = !self.halted && self.next < self.end;
        self.lost || (!more && self.entries.is_empty())
    }

    /// Takes in one recipient's answer; a skipped send halts the segment,
    /// and the reason is returned.
    fn answered(&mut self, idx: u64, result: Result<SendEntry, Skip>) -> Option<Skip> {
        self.in_flight.remove(&idx);
        match result {
            Ok(entry) => {
                self.entries.push(entry);
                None
            }
            Err(why) => {
                self.halted = true;
                self.skipped = Some(self.skipped.map_or(idx, |s| s.min(idx)));
                Some(why)
            }
        }
    }

    /// Takes in a write's answer: the new lease end while the claim holds;
    /// a lost claim or a failed write stops the segment.
    fn written(&mut self, answer: Option<(i64, Progress)>) -> Option<i64> {
        match answer {
            Some((until, at)) => {
                self.marked = self.marked.max(at.sent_to);
                Some(until)
            }
            None => {
                self.lost = true;
                self.halted = true;
                None
            }
        }
    }

    /// The lowest index not yet finished.
    fn cursor(&self) -> u64 {
        low_water(&self.in_flight, self.skipped, self.next)
    }
}

/// After the loop: logs the in-doubt recipients resolved, records what is
/// left, and finishes the segment when everything in it has an outcome.
async fn finish(
    sh: &Shared,
    claim: &SegmentClaim,
    job: &JobRecord,
    segment: &SegmentRecord,
    slice: &Slice,
    walk: Walk,
    lease: &AtomicI64,
) -> &'static str {
    if walk.resolving > 0 {
        tracing::info!(
            job = job.id,
            segment = segment.id,
            recipients = walk.resolving,
            in_doubt = slice.policy.as_str(),
            "resolved recipients a dead holder left in doubt"
        );
    }
    let cursor = walk.cursor();
    let mut lost = walk.lost;
    if !walk.entries.is_empty() || (!lost && cursor > walk.from) {
        let at = Progress {
            cursor,
            sent_to: walk.marked,
        };
        match record(sh, claim, at, walk.entries).await {
            Some((until, _)) => lease.store(until, Ordering::SeqCst),
            None => lost = true,
        }
    }
    if lost {
        return "lost";
    }
    if walk.halted || cursor < segment.end {
        return "stopped";
    }
    match sh.store.finish_segment(claim, sh.clock.now_ms()).await {
        Ok(LeaseCheck::Held { .. }) => "finished",
        Ok(LeaseCheck::Lost) => {
            tracing::info!(
                job = job.id,
                segment = segment.id,
                "segment changed hands before it could be finished"
            );
            "lost"
        }
        Err(e) => {
            tracing::warn!(error = %e, job = job.id, segment = segment.id, "finishing the segment failed; the sweeper will re-issue what is left");
            "unfinished"
        }
    }
}

/// The lowest index not yet finished: everything below it has an outcome.
fn low_water(in_flight: &BTreeSet<u64>, skipped: Option<u64>, next: u64) -> u64 {
    let mut low = next;
    if let Some(i) = in_flight.first() {
        low = low.min(*i);
    }
    if let Some(s) = skipped {
        low = low.min(s);
    }
    low
}

/// Writes outcomes, moves the cursor and raises `sent_to`; `Some((new lease
/// end, what was written))` while the claim holds, `None` once it is lost or
/// cannot be written (then the worker stops: what it sent is either recorded
/// or in doubt for whoever takes the segment next).
async fn record(
    sh: &Shared,
    claim: &SegmentClaim,
    at: Progress,
    entries: Vec<SendEntry>,
) -> Option<(i64, Progress)> {
    let n = entries.len();
    let write = SegmentWrite {
        claim: claim.clone(),
        at,
        entries,
    };
    let answer = sh
        .writes
        .submit(write, WRITES_PER_COMMIT, |writes: Vec<SegmentWrite>| async move {
            let k = writes.len();
            let (now, lease_ms) = (sh.clock.now_ms(), sh.cfg.get().lease_ms);
            match sh.store.record_many(writes, now, lease_ms).await {
                Ok(checks) => Some(checks),
                Err(e) => {
                    tracing::warn!(error = %e, writes = k, "recording sends failed; those segments stop");
                    None
                }
            }
        })
        .await;
    match answer {
        Some(LeaseCheck::Held { lease_until }) => Some((lease_until, at)),
        Some(LeaseCheck::Lost) => {
            tracing::warn!(
                job = claim.job_id,
                segment = claim.segment_id,
                recorded = n,
                "segment claim lost; stopping"
            );
            None
        }
        None => None,
    }
}

/// What became of one recipient of a group.
type Sent = (u64, Result<SendEntry, Skip>);

/// A recipient about to be sent to, as the send log will name it.
struct Outgoing {
    index: u64,
    /// What the send log records: the audience entry (a user id for a
    /// directory job, whose address is read afresh at each attempt).
    logged: String,
}

/// A directory recipient sent as several copies (each device of an app push).
struct Fanned {
    delivery: Delivery,
    addresses: Vec<String>,
    devices: bool,
    services: Vec<Option<herald_core::device::PushService>>,
}

/// A group resolved and ready to send ([`prepare`]).
struct Prepared {
    /// Recipients settled without a send: no recipient at the index, or
    /// the directory found no address, an opt-out or quiet hours.
    settled: Vec<Sent>,
    /// Deliveries to one address each, sent in one call (a batch call for
    /// several).
    deliveries: Vec<Delivery>,
    /// Directory recipients sent as several copies.
    fanned: Vec<Fanned>,
    /// Who `deliveries` and then `fanned` go to, in that order.
    outgoing: Vec<Outgoing>,
    /// Whether the channel's quiet hours are passed over: a critical job,
    /// or a directory job whose recipients all had their own checked.
    skip_channel_quiet: bool,
}

/// Why a group goes unsent after all ([`Call::send_until_answered`]).
enum Unsent {
    /// The claim or the deadline no longer allows a send.
    Skipped(Skip),
    /// The channel's quiet hours drop it (their label).
    Dropped(String),
}

/// One provider call for a group of recipients (one, unless the channel
/// batches): resolve directory recipients, wait out any provider pause and the
/// rate limit, check the claim, the deadline and quiet hours, send, and turn
/// each answer into a send-log entry. A throttle answer pauses the channel and
/// sends the same group again once the pause is over, under the same keys and
/// attempt numbers, so throttling never uses up attempts.
async fn send_group(
    sh: &Shared,
    rt: &ChannelRuntime,
    job: &JobRecord,
    lease: &AtomicI64,
    dir: Option<&Directory>,
    group: Vec<(u64, String, u32)>,
) -> Vec<Sent> {
    let Prepared {
        settled: mut out,
        mut deliveries,
        mut fanned,
        outgoing,
        skip_channel_quiet,
    } = prepare(
        rt,
        job,
        dir,
        Some(&sh.templates.library()),
        group,
        sh.clock.now_ms(),
    );
    if outgoing.is_empty() {
        return out;
    }
    let call = Call {
        sh,
        rt,
        job,
        lease,
        skip_channel_quiet,
    };
    match call.send_until_answered(&mut deliveries, &mut fanned).await {
        Ok((outcomes, notes)) => out.extend(log_answers(sh, rt, job, outgoing, outcomes, notes)),
        Err(Unsent::Skipped(why)) => out.extend(outgoing.iter().map(|o| (o.index, Err(why)))),
        Err(Unsent::Dropped(label)) => {
            rt.counts
                .quiet
                .fetch_add(outgoing.len() as u64, Ordering::Relaxed);
            let why = format!("dropped: quiet hours ({label})");
            out.extend(outgoing.into_iter().map(|o| {
                (
                    o.index,
                    Ok(entry(
                        o.index,
                        o.logged,
                        SendState::Failed,
                        None,
                        Some(why.clone()),
                    )),
                )
            }));
        }
    }
    out
}

/// Resolves a group's recipients at `resolved_at`: each becomes a delivery
/// to one address, a delivery sent as copies (a directory recipient with
/// several addresses or devices), or a send-log entry settled without a
/// send.
fn prepare(
    rt: &ChannelRuntime,
    job: &JobRecord,
    dir: Option<&Directory>,
    library: Option<&herald_core::template::Library>,
    group: Vec<(u64, String, u32)>,
    resolved_at: i64,
) -> Prepared {
    // A job that names a template renders each recipient's message, in
    // their locale and zone when the audience is user ids; its stored
    // message is the template's data.
    let template = Routing::parse(job.routing.as_deref()).template;
    let part = rt.channel().kind().template_part();
    let data = || match serde_json::from_str::<serde_json::Value>(&job.message) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let mut out: Vec<Sent> = Vec::new();
    let mut deliveries = Vec::with_capacity(group.len());
    let mut fanned: Vec<Fanned> = Vec::new();
    let mut outgoing: Vec<Outgoing> = Vec::with_capacity(group.len());
    let mut fanned_out: Vec<Outgoing> = Vec::new();
    let critical = dir.is_none() && Routing::parse(job.routing.as_deref()).critical;
    let mut skip_channel_quiet = critical || dir.is_some();
    let settle = |idx: u64, logged: String, error: String| -> Sent {
        (
            idx,
            Ok(entry(idx, logged, SendState::Failed, None, Some(error))),
        )
    };
    for (idx, recipient, attempt) in group {
        if recipient.is_empty() {
            let error = "no recipient at this index of the audience".to_string();
            out.push(settle(idx, recipient, error));
            continue;
        }
        let message = match (&template, library) {
            (Some(r), Some(lib)) => {
                let profile = dir.and_then(|d| d.profile(job, &recipient));
                match crate::timers::render::with_data(lib, job.tenant, r, data(), part, profile) {
                    Ok(m) => m,
                    Err(e) => {
                        rt.metrics.template_error.increment(1);
                        out.push(settle(idx, recipient, format!("template_error: {e}")));
                        continue;
                    }
                }
            }
            _ => job.message.clone(),
        };
        let delivery = Delivery {
            timer_id: job.id,
            kind: TimerKind::Job,
            due_at: job.created_at,
            fired_at: 0,
            attempt,
            recipient: recipient.clone(),
            message,
            idempotency_key: job_recipient_key(job.id, idx),
            traceparent: job.traceparent.clone(),
        };
        let sent = Outgoing {
            index: idx,
            logged: recipient,
        };
        let Some(dir) = dir else {
            deliveries.push(delivery);
            outgoing.push(sent);
            continue;
        };
        let skip = &mut skip_channel_quiet;
        match address(rt, dir, job, delivery, &sent.logged, resolved_at, skip) {
            Addressed::One(delivery) => {
                deliveries.push(delivery);
                outgoing.push(sent);
            }
            Addressed::Copies(f) => {
                fanned.push(f);
                fanned_out.push(sent);
            }
            Addressed::Settled(error) => out.push(settle(idx, sent.logged, error)),
        }
    }
    outgoing.extend(fanned_out);
    Prepared {
        settled: out,
        deliveries,
        fanned,
        outgoing,
        skip_channel_quiet,
    }
}

/// Where the directory sends one recipient of a directory job ([`address`]).
enum Addressed {
    /// To one address.
    One(Delivery),
    /// As copies to several addresses, or to each device of an app push.
    Copies(Fanned),
    /// Nowhere: no address, an opt-out or quiet hours; the send-log error.
    Settled(String),
}

/// Resolves one recipient (`logged`, a user id) through the directory at
/// `resolved_at`; clears `skip_channel_quiet` when the recipient has no
/// quiet hours of their own, so the channel's apply.
fn address(
    rt: &ChannelRuntime,
    dir: &Directory,
    job: &JobRecord,
    mut delivery: Delivery,
    logged: &str,
    resolved_at: i64,
    skip_channel_quiet: &mut bool,
) -> Addressed {
    match dir.resolve(job, logged, resolved_at) {
        Resolved::Send {
            mut addresses,
            devices,
            services,
            skip_channel_quiet: skip,
        } => {
            *skip_channel_quiet &= skip;
            if addresses.len() == 1 && !devices {
                delivery.recipient = addresses.pop().unwrap_or_default();
                Addressed::One(delivery)
            } else {
                Addressed::Copies(Fanned {
                    delivery,
                    addresses,
                    devices,
                    services,
                })
            }
        }
        Resolved::Unsendable(why) => {
            match why {
                Unsendable::NoAddress => rt.metrics.no_address.increment(1),
                Unsendable::OptedOut => rt.metrics.opted_out.increment(1),
                Unsendable::TemplateError => rt.metrics.template_error.increment(1),
                Unsendable::Capped => rt.metrics.capped.increment(1),
                // Only reminders expire.
                Unsendable::Expired => rt.metrics.expired.increment(1),
                Unsendable::NoGrant => rt.metrics.no_grant.increment(1),
            }
            Addressed::Settled(CompletionOutcome::Unsendable(why).as_str().into())
        }
        Resolved::Quiet(until) => {
            rt.counts.quiet.fetch_add(1, Ordering::Relaxed);
            Addressed::Settled(directory::quiet_error(until))
        }
    }
}

/// What one group's provider call runs under.
struct Call<'a> {
    sh: &'a Shared,
    rt: &'a ChannelRuntime,
    job: &'a JobRecord,
    lease: &'a AtomicI64,
    skip_channel_quiet: bool,
}

impl Call<'_> {
    /// Sends the group once the rate, an operator's pause and deferring
    /// quiet hours let it, and again after a throttle answer; the answers
    /// (one per recipient, `deliveries` then `fanned`), each with a note
    /// from sending copies. `Err` when the claim, the deadline or dropping
    /// quiet hours stop it first.
    async fn send_until_answered(
        &self,
        deliveries: &mut [Delivery],
        fanned: &mut [Fanned],
    ) -> Result<(Vec<SendOutcome>, Vec<Option<String>>), Unsent> {
        let (sh, rt, job) = (self.sh, self.rt, self.job);
        loop {
            rt.wait_for_rate(sh.clock.as_ref(), job.priority).await;
            let now = sh.clock.now_ms();
            if now.saturating_add(sh.cfg.get().lease_guard_ms) >= self.lease.load(Ordering::SeqCst)
            {
                return Err(Unsent::Skipped(Skip::Lease));
            }
            if job.deadline_at.is_some_and(|d| now >= d) {
                return Err(Unsent::Skipped(Skip::Deadline));
            }
            // An operator's pause holds the group like deferring quiet hours do:
            // nothing is sent, no attempt is used, and the claim stays ours.
            let paused_for = rt.operator.until().saturating_sub(now);
            if paused_for > 0 {
                let nap = paused_for.clamp(1, 1_000) as u64;
                tokio::time::sleep(Duration::from_millis(nap)).await;
                continue;
            }
            // The channel's quiet hours; a directory job's recipients had their
            // own checked instead when they have any (see `Resolved::Send`).
            let quiet = rt.quiet_until(now).filter(|_| !self.skip_channel_quiet);
            if let Some((end, policy, label)) = quiet {
                match policy {
                    // Hold the segment and wait for the window to end; the loop
                    // above keeps recording, which keeps the claim alive, and the
                    // checks here still stop on a lost claim or the deadline.
                    QuietPolicy::Defer => {
                        let nap = (end - now).clamp(1, 1_000) as u64;
                        tokio::time::sleep(Duration::from_millis(nap)).await;
                        continue;
                    }
                    QuietPolicy::Drop => return Err(Unsent::Dropped(label)),
                }
            }
            let (outcomes, notes) = self.call(deliveries, fanned, now).await;
            // A batch call is throttled as a whole: pause once, send it all again.
            let throttled = outcomes
                .iter()
                .any(|o| matches!(o, SendOutcome::Throttled { .. }));
            if !throttled {
                return Ok((outcomes, notes));
            }
        }
    }

    /// One provider call at `now`: the single-address deliveries (one send,
    /// or one batch send), then each fanned recipient's copies. Records the
    /// call's duration and lets the channel observe each answer (a throttle
    /// pauses it).
    async fn call(
        &self,
        deliveries: &mut [Delivery],
        fanned: &mut [Fanned],
        now: i64,
    ) -> (Vec<SendOutcome>, Vec<Option<String>>) {
        let (sh, rt, job) = (self.sh, self.rt, self.job);
        for d in deliveries.iter_mut() {
            d.fired_at = now;
        }
        let mut outcomes = match deliveries.len() {
            0 => Vec::new(),
            1 => vec![rt.channel().send(&deliveries[0]).await],
            _ => rt.channel().send_batch(deliveries).await,
        };
        let mut notes: Vec<Option<String>> = vec![None; outcomes.len()];
        for f in fanned.iter_mut() {
            f.delivery.fired_at = now;
            let copies = copies::Copies {
                tenant: job.tenant,
                user_id: &f.delivery.recipient,
                addresses: &f.addresses,
                devices: f.devices,
                services: &f.services,
                channels: &sh.channels,
                priority: job.priority,
            };
            let (o, note) = copies::send_copies(
                sh.store.as_ref(),
                sh.clock.as_ref(),
                rt,
                &f.delivery,
                copies,
            )
            .await;
            outcomes.push(o);
            notes.push(note);
        }
        let finished = sh.clock.now_ms();
        rt.metrics
            .duration
            .record((finished - now).max(0) as f64 / 1000.0);
        for o in &mut outcomes {
            rt.observe(o, 1, finished);
        }
        (outcomes, notes)
    }
}

/// Counts a group's answers in the live window and the channel's metrics,
/// and turns each into its recipient's send-log entry.
fn log_answers(
    sh: &Shared,
    rt: &ChannelRuntime,
    job: &JobRecord,
    outgoing: Vec<Outgoing>,
    outcomes: Vec<SendOutcome>,
    notes: Vec<Option<String>>,
) -> Vec<Sent> {
    let finished = sh.clock.now_ms();
    sh.live.record(
        finished,
        outcomes.iter().map(|o| LiveEntry {
            tenant: job.tenant,
            channel: rt.name(),
            outcome: match o {
                SendOutcome::Delivered { .. } => LiveOutcome::Delivered,
                SendOutcome::Retryable { .. } | SendOutcome::Throttled { .. } => LiveOutcome::Retry,
                SendOutcome::Permanent { .. } => LiveOutcome::Failed,
            },
            lateness_ms: None,
        }),
    );
    let mut out = Vec::with_capacity(outgoing.len());
    for ((o, outcome), note) in outgoing.into_iter().zip(outcomes).zip(notes) {
        let (state, provider_msgid, error) = match outcome {
            SendOutcome::Delivered { provider_msgid, .. } => {
                rt.metrics.delivered.increment(1);
                (SendState::Delivered, provider_msgid, None)
            }
            SendOutcome::Retryable { error, .. } | SendOutcome::Throttled { error, .. } => {
                rt.metrics.retry.increment(1);
                (SendState::Retry, None, Some(error))
            }
            SendOutcome::Permanent { error, .. } => {
                rt.metrics.failed.increment(1);
                (SendState::Failed, None, Some(error))
            }
        };
        let error = match (error, note) {
            (Some(e), Some(n)) => Some(format!("{e}; {n}")),
            (e, n) => e.or(n),
        };
        out.push((
            o.index,
            Ok(entry(o.index, o.logged, state, provider_msgid, error)),
        ));
    }
    out
}

fn entry(
    index: u64,
    recipient: String,
    state: SendState,
    provider_msgid: Option<String>,
    error: Option<String>,
) -> SendEntry {
    SendEntry {
        index,
        recipient,
        state,
        provider_msgid,
        error,
    }
}

#[cfg(test)]
mod tests {
    use herald_core::campaign::JobState;

    use super::*;
    use crate::config::EngineConfig;
    use crate::testkit::{CHANNEL, Rig, T0};

    fn job(routing: Option<&str>) -> JobRecord {
        JobRecord {
            id: 7,
            tenant: herald_core::DEFAULT_TENANT,
            audience_id: 1,
            channel: CHANNEL.into(),
            message: r#"{"text":"hi"}"#.into(),
            segment_size: 100,
            deadline_at: None,
            priority: 5,
            task_id: None,
            state: JobState::Running,
            totals: Default::default(),
            created_at: T0,
            started_at: None,
            finished_at: None,
            routing: routing.map(str::to_string),
            traceparent: None,
            meta: Default::default(),
            follows: None,
            last_sent_at: None,
        }
    }

    #[test]
    fn a_batching_channel_keeps_its_concurrency_and_widens_the_window() {
        let cfg = CampaignConfig {
            worker_concurrency: 64,
            lease_ms: 15_000,
            ..CampaignConfig::default()
        };
        let one = Pace::of(&cfg, 8, 1);
        assert_eq!((one.conc, one.batch, one.window), (8, 1, cfg.doubt_window));
        assert_eq!((one.write_at, one.low_mark), (500, cfg.doubt_window / 4));
        assert_eq!(one.record_period, Duration::from_secs(5));
        // Four calls of 1,000 in flight do not fit the window: it widens.
        let batched = Pace::of(&cfg, 4, 1_000);
        assert_eq!(
            (batched.conc, batched.batch, batched.window),
            (4, 1_000, 4_000)
        );
        let tight = Pace::of(
            &CampaignConfig {
                doubt_window: 64,
                ..cfg
            },
            64,
            1,
        );
        assert_eq!((tight.window, tight.write_at, tight.low_mark), (64, 32, 16));
    }

    fn pace(window: u64, conc: usize) -> Pace {
        let cfg = CampaignConfig {
            doubt_window: window,
            ..CampaignConfig::default()
        };
        Pace::of(&cfg, conc, 1)
    }

    fn plain(from: u64, end: u64) -> Slice {
        Slice {
            from,
            recipients: (from..end).map(|i| format!("r{i}")).collect(),
            dir: None,
            prior: HashMap::new(),
            doubt: 0..0,
            policy: InDoubt::Resend,
        }
    }

    #[test]
    fn a_walk_writes_answers_in_batches_and_marks_ahead_before_the_sends_wait() {
        let (pace, slice) = (pace(8, 4), plain(0, 100));
        assert_eq!((pace.write_at, pace.low_mark), (4, 2));
        let mut walk = Walk::new(0, 100, 0);
        let (at, _) = walk.write_now(&pace, false, true).expect("a first mark");
        assert_eq!(at.sent_to, 8);
        walk.written(Some((T0, at)));
        for i in 0..4 {
            assert_eq!(walk.fill(&slice, 1), [(i, format!("r{i}"), 1)]);
        }
        // Sends flowing well below the mark: no write.
        assert!(walk.write_now(&pace, false, false).is_none());
        for i in 0..3 {
            walk.answered(
                i,
                Ok(entry(i, format!("r{i}"), SendState::Delivered, None, None)),
            );
        }
        for i in 4..7 {
            assert_eq!(walk.fill(&slice, 1).len(), 1, "{i}");
        }
        // Four in flight, three answered, one marked ahead: the stretch runs
        // low, so the answers go with a new mark as far as their room allows.
        let (at, batch) = walk
            .write_now(&pace, false, false)
            .expect("the mark runs low");
        assert_eq!((at.cursor, at.sent_to, batch.len()), (3, 11, 3));
        walk.written(Some((T0, at)));
        walk.answered(
            3,
            Ok(entry(3, "r3".into(), SendState::Delivered, None, None)),
        );
        assert_eq!(walk.fill(&slice, 1).len(), 1);
        // Sends flowing, three marked ahead, one answer: no write.
        assert!(walk.write_now(&pace, false, false).is_none());
        for i in 4..7 {
            walk.answered(
                i,
                Ok(entry(i, format!("r{i}"), SendState::Delivered, None, None)),
            );
        }
        let (at, batch) = walk
            .write_now(&pace, false, false)
            .expect("half the window answered");
        // 7 in flight, 8..15 marked: the window of 8.
        assert_eq!((at.cursor, at.sent_to, batch.len()), (7, 15, 4));
    }

    /// A segment smaller than the window is marked whole at once, and its
    /// answers are still written half-way, not only at its end.
    #[test]
    fn a_segment_inside_the_window_is_marked_whole_and_written_half_way() {
        let (pace, slice) = (pace(1_024, 64), plain(0, 1_000));
        let mut walk = Walk::new(0, 1_000, 0);
        let (at, _) = walk.write_now(&pace, false, true).expect("a first mark");
        assert_eq!(at.sent_to, 1_000);
        walk.written(Some((T0, at)));
        let mut writes = Vec::new();
        while walk.next < walk.end || !walk.in_flight.is_empty() {
            while walk.in_flight.len() < pace.conc && !walk.fill(&slice, 1).is_empty() {}
            if let Some(&i) = walk.in_flight.first() {
                walk.answered(
                    i,
                    Ok(entry(i, format!("r{i}"), SendState::Delivered, None, None)),
                );
            }
            if let Some((at, batch)) = walk.write_now(&pace, false, walk.in_flight.is_empty()) {
                writes.push((at.cursor, batch.len()));
                walk.written(Some((T0, at)));
            }
        }
        assert_eq!(writes, [(500, 500), (1_000, 500)]);
    }

    /// Whatever the order of answers and commits, what a crash could leave
    /// in doubt (below the committed mark, with no committed outcome) never
    /// exceeds the window.
    #[test]
    fn what_a_crash_leaves_in_doubt_never_exceeds_the_window() {
        let cases = [(1, 1), (4, 4), (8, 3), (64, 64), (100, 16)];
        // Marked at the claim (a window ahead) or not at all.
        for ((window, conc), claimed) in cases.iter().flat_map(|&c| [(c, 0), (c, c.0)]) {
            let (pace, slice) = (pace(window, conc), plain(0, 2_000));
            let mut walk = Walk::new(0, 2_000, claimed);
            let mut rng = 0x2545_f491_4f6c_dd1d_u64 ^ window;
            let mut roll = |n: u64| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng % n.max(1)
            };
            let mut committed: BTreeSet<u64> = BTreeSet::new();
            let mut stored_mark = claimed;
            let mut writing: Option<(Progress, Vec<SendEntry>)> = None;
            for _ in 0..20_000 {
                while walk.in_flight.len() < pace.conc {
                    if walk.fill(&slice, 1).is_empty() {
                        break;
                    }
                }
                if !walk.in_flight.is_empty() && roll(3) > 0 {
                    let k = roll(walk.in_flight.len() as u64) as usize;
                    if let Some(&i) = walk.in_flight.iter().nth(k) {
                        let e = entry(i, format!("r{i}"), SendState::Delivered, None, None);
                        walk.answered(i, Ok(e));
                    }
                }
                if writing.is_none() {
                    writing = walk.write_now(&pace, false, walk.in_flight.is_empty());
                } else if roll(4) == 0 {
                    let (at, batch) = writing.take().expect("a write");
                    committed.extend(batch.iter().map(|e| e.index));
                    stored_mark = stored_mark.max(at.sent_to);
                    walk.written(Some((T0, at)));
                }
                assert!(walk.next <= stored_mark.max(walk.from));
                let doubt = (0..stored_mark).filter(|i| !committed.contains(i)).count();
                assert!(
                    doubt as u64 <= window,
                    "window {window}: {doubt} could be in doubt"
                );
                if walk.next == walk.end
                    && walk.in_flight.is_empty()
                    && writing.is_none()
                    && walk.entries.is_empty()
                {
                    break;
                }
            }
            assert_eq!(
                committed.len(),
                2_000,
                "window {window}: the segment went through"
            );
        }
    }

    #[test]
    fn a_walk_sends_below_its_mark_and_writes_the_cursor_below_what_is_out() {
        let slice = Slice {
            from: 10,
            recipients: (10..20).map(|i| format!("r{i}")).collect(),
            dir: None,
            prior: HashMap::from([(11, (SendState::Delivered, 1)), (12, (SendState::Retry, 2))]),
            doubt: 13..14,
            policy: InDoubt::Skip,
        };
        let pace = pace(2, 2);
        let mut walk = Walk::new(10, 20, 10);
        // Nothing may go before the store has a mark.
        assert!(walk.fill(&slice, 1).is_empty());
        let (at, batch) = walk.write_now(&pace, false, true).expect("a mark");
        assert_eq!((at.cursor, at.sent_to, batch.len()), (10, 12, 0));
        assert_eq!(walk.written(Some((T0, at))), Some(T0));
        assert_eq!(walk.fill(&slice, 1), [(10, "r10".to_string(), 1)]);
        // 11 is final and passed over; 12 waits for the next mark.
        assert!(walk.fill(&slice, 1).is_empty());
        let (at, _) = walk.write_now(&pace, false, false).expect("a mark");
        assert_eq!((at.cursor, at.sent_to), (10, 13));
        walk.written(Some((T0, at)));
        // 12 goes again as its third attempt; 13, left in doubt, ends so unsent.
        assert_eq!(walk.fill(&slice, 3), [(12, "r12".to_string(), 3)]);
        assert_eq!(walk.resolving, 1);
        let delivered = entry(10, "r10".into(), SendState::Delivered, None, None);
        assert_eq!(walk.answered(10, Ok(delivered)), None);
        assert_eq!(walk.answered(12, Err(Skip::Lease)), Some(Skip::Lease));
        let (at, batch) = walk.write_now(&pace, false, true).expect("the answers");
        assert_eq!((at.cursor, at.sent_to), (12, 13), "below the skipped send");
        let written: Vec<(u64, SendState)> = batch.iter().map(|e| (e.index, e.state)).collect();
        assert_eq!(
            written,
            [(13, SendState::InDoubt), (10, SendState::Delivered)]
        );
        assert!(walk.finished());
        assert_eq!(walk.written(None), None);
        assert!(
            walk.write_now(&pace, true, true).is_none(),
            "nothing once lost"
        );
    }

    #[tokio::test]
    async fn a_group_without_a_directory_sends_to_each_stored_recipient() {
        let rig = Rig::new(EngineConfig::default()).await;
        let rt = rig.pipe.channels[CHANNEL].clone();
        let group = vec![(3, String::new(), 1), (4, "a@example.com".into(), 2)];
        let p = prepare(&rt, &job(None), None, None, group, T0);
        assert_eq!(p.settled.len(), 1);
        let (index, Ok(settled)) = &p.settled[0] else {
            panic!("settled without a send");
        };
        assert_eq!((*index, settled.state), (3, SendState::Failed));
        let sent: Vec<(u64, &str)> = p
            .outgoing
            .iter()
            .map(|o| (o.index, o.logged.as_str()))
            .collect();
        assert_eq!(sent, [(4, "a@example.com")]);
        let d = &p.deliveries[0];
        assert_eq!(
            (d.attempt, d.idempotency_key.as_str()),
            (2, job_recipient_key(7, 4).as_str())
        );
        assert!(p.fanned.is_empty());
        assert!(
            !p.skip_channel_quiet,
            "a job that is not critical keeps quiet hours"
        );
        let critical = prepare(
            &rt,
            &job(Some(r#"{"critical":true}"#)),
            None,
            None,
            Vec::new(),
            T0,
        );
        assert!(critical.skip_channel_quiet);
    }
}
