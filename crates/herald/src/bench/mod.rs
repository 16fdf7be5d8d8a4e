//! `herald bench`: load generators that measure Herald against its budgets
//! (the figures and how they were taken: `BENCHMARKS.md`).
//!
//! Each scenario starts a webhook sink in this process and a real
//! `herald serve` child process on a fresh temporary store, drives it over
//! HTTP, and reports figures measured at the sink. Nothing is simulated.
//!
//! One file per scenario; beside them the harness (the nodes under test and
//! their store), the sink, the load helpers, the CPU meter and the plots.

mod app_push;
mod burst;
mod campaign;
mod console;
mod cpu;
mod fairness;
mod harness;
mod in_time;
mod ingest;
mod load;
mod loopback;
mod pg;
mod plot;
mod precision;
mod purge;
mod reminders;
mod restart;
mod sink;
mod sms;
mod soak;
mod stats;
mod tenant_sink;

use clap::Subcommand;

use app_push::AppPushArgs;
use burst::BurstArgs;
use campaign::CampaignArgs;
use console::ConsoleArgs;
use fairness::FairnessArgs;
use harness::ServerArgs;
use in_time::InTimeArgs;
use ingest::IngestArgs;
use precision::PrecisionArgs;
use purge::PurgeArgs;
use reminders::RemindersArgs;
use restart::RestartArgs;
use sms::SmsArgs;
use soak::SoakArgs;
use stats::StatsArgs;

#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// N timers due at the same instant: time to deliver them all and mark them done.
    Burst(BurstArgs),
    /// N timers spread over S seconds: how late each one fires.
    Precision(PrecisionArgs),
    /// Timer creation rate: single `POST /v1/timers`, or the bulk endpoint.
    Ingest(IngestArgs),
    /// N pending timers, `kill -9`, restart: how soon firing resumes, and RSS.
    Restart(RestartArgs),
    /// N users subscribe to one subject with the same lead: the subscribe
    /// rate, and how long the reminders take to drain when they all fall due.
    Reminders(RemindersArgs),
    /// N reminders due at one instant on a rate-limited channel with an
    /// early window: every one between `due - window` and due, none after
    /// the start (or, without a window, how many expired).
    InTime(InTimeArgs),
    /// One job to an uploaded audience of N recipients: upload rate, and
    /// recipients per second to the sink.
    Campaign(CampaignArgs),
    /// One job to N phone numbers through an SMS channel (Tencent: 200 a
    /// call) to the provider's mock: elapsed and numbers per second.
    Sms(SmsArgs),
    /// Tenant a's N timers due at one instant, tenant b's M due a second
    /// later: b's lateness while a drains, and a's drain rate against a alone.
    Fairness(FairnessArgs),
    /// N pending timers and a job to M recipients in the store: how fast
    /// each console page's requests answer (median and p90 over rounds).
    Console(ConsoleArgs),
    /// N timers in the store: how fast `GET /v1/stats` answers (median and
    /// p99 over calls).
    Stats(StatsArgs),
    /// Timers created at a steady rate with short retention: the store's
    /// size, RSS and p99 lateness over time (table, JSON, PNG plot).
    Soak(SoakArgs),
    /// N timers spread over S seconds while retention deletes M expired
    /// timers from a SQLite store: how late they fire.
    Purge(PurgeArgs),
    /// One job to users whose N app devices are spread over FCM and the
    /// vendor push services: every live device reached once through its own
    /// service, every dead token pruned, and device pushes per second.
    AppPush(AppPushArgs),
}

impl BenchCmd {
    fn server(&self) -> &ServerArgs {
        match self {
            BenchCmd::Burst(a) => &a.server,
            BenchCmd::Precision(a) => &a.server,
            BenchCmd::Ingest(a) => &a.server,
            BenchCmd::Restart(a) => &a.server,
            BenchCmd::Reminders(a) => &a.server,
            BenchCmd::InTime(a) => &a.server,
            BenchCmd::Campaign(a) => &a.server,
            BenchCmd::Sms(a) => &a.server,
            BenchCmd::Fairness(a) => &a.server,
            BenchCmd::Console(a) => &a.server,
            BenchCmd::Stats(a) => &a.server,
            BenchCmd::Soak(a) => &a.server,
            BenchCmd::Purge(a) => &a.server,
            BenchCmd::AppPush(a) => &a.server,
        }
    }
}

pub async fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    // A store the bench cannot use fails here, before anything starts.
    cmd.server().store_choice()?;
    match cmd {
        BenchCmd::Burst(a) => burst::run(a).await,
        BenchCmd::Precision(a) => precision::run(a).await,
        BenchCmd::Ingest(a) => ingest::run(a).await,
        BenchCmd::Restart(a) => restart::run(a).await,
        BenchCmd::Reminders(a) => reminders::run(a).await,
        BenchCmd::InTime(a) => in_time::run(a).await,
        BenchCmd::Campaign(a) => campaign::run(a).await,
        BenchCmd::Sms(a) => sms::run(a).await,
        BenchCmd::Fairness(a) => fairness::run(a).await,
        BenchCmd::Console(a) => console::run(a).await,
        BenchCmd::Stats(a) => stats::run(a).await,
        BenchCmd::Soak(a) => soak::run(a).await,
        BenchCmd::Purge(a) => purge::run(a).await,
        BenchCmd::AppPush(a) => app_push::run(a).await,
    }
}
