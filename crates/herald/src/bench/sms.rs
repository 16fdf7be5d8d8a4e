//! `herald bench sms`: one campaign to N phone numbers through an SMS
//! channel (`tencent_sms` by default, 200 numbers a call) to the mock in
//! this process, which checks every call's signature and each number's
//! limits as the provider does. The campaign scenario does the work; this
//! one picks the channel, the phone-number audience and the segment size.

use clap::Args;

use super::campaign::{self, CampaignArgs};
use super::harness::ServerArgs;
use super::sink::BenchChannel;

/// Which SMS provider's mock the numbers go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SmsProvider {
    Tencent,
    Aliyun,
}

#[derive(Args, Debug)]
pub struct SmsArgs {
    /// Phone numbers in the audience.
    #[arg(long, default_value_t = 1_000_000)]
    recipients: usize,
    /// Which SMS provider's mock API the campaign sends through.
    #[arg(long, value_enum, default_value_t = SmsProvider::Tencent)]
    provider: SmsProvider,
    /// Recipients per segment (a multiple of the provider's batch: 200
    /// for Tencent, 1,000 for Aliyun). Large: with 200 numbers a call the
    /// segments' claims and ends, not the sends, were what a million
    /// recipients waited on at 1,000.
    #[arg(long, default_value_t = 10_000)]
    segment_size: u64,
    /// Segment worker loops per node.
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// Sends (provider calls) in flight per worker.
    #[arg(long, default_value_t = 64)]
    worker_concurrency: usize,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

pub(super) async fn run(a: SmsArgs) -> anyhow::Result<()> {
    let channel = match a.provider {
        SmsProvider::Tencent => BenchChannel::TencentSms,
        SmsProvider::Aliyun => BenchChannel::AliyunSms,
    };
    campaign::run(CampaignArgs {
        recipients: a.recipients,
        segment_size: a.segment_size,
        workers: a.workers,
        worker_concurrency: a.worker_concurrency,
        doubt_window: None,
        channel,
        loopback: Some(0),
        scenario: Some("sms"),
        server: a.server,
    })
    .await
}
