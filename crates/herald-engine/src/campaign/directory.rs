//! A job whose audience holds user ids (`to` on the job or its rule): each
//! recipient goes to the address the subscriber directory holds for the
//! channel's type when its segment is sent, through the same decision a timer
//! addressed `to` a user gets (`crate::timers::recipients`).
//!
//! A campaign cannot hold one recipient back without holding its whole
//! segment (and a worker) for hours, so a subscriber inside their quiet hours
//! is not deferred: the send ends `failed` with error `quiet_hours`, listed
//! among the job's failures, where `POST /v1/jobs/{id}:retry-failed` sends
//! those again once the hours are over. A `critical` job is sent anyway.

use herald_core::ChannelType;
use herald_core::caps::{self, CapRule, CapSend};
use herald_core::device::PushService;
use herald_core::time::format_rfc3339_ms;
use herald_core::timer::Routing;
use herald_store::{CapTake, CapVerdict, JobRecord, Store, StoreError, Unsendable};

use crate::timers::recipients::{self, Addressee, Profiles, Route};

/// Directory reads per store call.
const READ_CHUNK: usize = 1_000;

/// The routing of a job with `to`, and the directory entries of one
/// segment's users, read when the segment is claimed.
pub(super) struct Directory {
    channel_type: ChannelType,
    topic: Option<String>,
    critical: bool,
    profiles: Profiles,
    /// Users over a frequency cap at the segment's claim, with the cap.
    capped: std::collections::HashMap<String, String>,
}

/// What becomes of one recipient of a directory job.
pub(super) enum Resolved {
    /// Send to these addresses (one, or each device of an app push).
    Send {
        addresses: Vec<String>,
        devices: bool,
        /// Each device's push service (app push only).
        services: Vec<Option<PushService>>,
        /// The channel's own quiet hours do not apply to this one.
        skip_channel_quiet: bool,
    },
    /// Final without a send; its outcome name is the send-log error.
    Unsendable(Unsendable),
    /// Inside the subscriber's quiet hours until then (unix ms).
    Quiet(i64),
}

impl Directory {
    /// The directory of `job` for the users in `recipients`; `None` when the
    /// job's audience holds raw addresses.
    pub async fn read(
        store: &dyn Store,
        job: &JobRecord,
        recipients: &[String],
    ) -> Result<Option<Self>, StoreError> {
        let routing = Routing::parse(job.routing.as_deref());
        let Some(channel_type) = routing.to else {
            return Ok(None);
        };
        let mut dir = Directory {
            channel_type,
            topic: routing.topic,
            critical: routing.critical,
            profiles: Profiles::new(),
            capped: Default::default(),
        };
        for chunk in recipients.chunks(READ_CHUNK) {
            let who: Vec<Addressee> = chunk.iter().map(|u| dir.addressee(job, u)).collect();
            for (tenant, found) in recipients::profiles(store, &who).await? {
                dir.profiles.entry(tenant).or_default().extend(found);
            }
        }
        Ok(Some(dir))
    }

    fn addressee(&self, job: &JobRecord, user_id: &str) -> Addressee {
        Addressee {
            tenant: job.tenant,
            user_id: user_id.to_string(),
            channel_type: self.channel_type,
            topic: self.topic.clone(),
            critical: self.critical,
            fallback_to_id: false,
        }
    }

    /// Checks the frequency caps of the users in `users` who would be sent
    /// to at `now_ms` (not those the directory settles or holds; never a
    /// critical job) and takes their slots, in one store call for the
    /// segment: the slot is taken when the segment is claimed. Those over a
    /// cap then resolve to `capped`.
    pub async fn take_caps(
        &mut self,
        store: &dyn Store,
        job: &JobRecord,
        users: &[&str],
        rules: &[CapRule],
        now_ms: i64,
    ) -> Result<(), StoreError> {
        if rules.is_empty() || self.critical {
            return Ok(());
        }
        let mut takes = Vec::new();
        let mut whose = Vec::new();
        for &user in users {
            if !matches!(self.resolve(job, user, now_ms), Resolved::Send { .. }) {
                continue;
            }
            let send = CapSend {
                tenant: job.tenant,
                user_id: user,
                channel_type: self.channel_type,
                topic: self.topic.as_deref(),
                critical: self.critical,
            };
            let checks = caps::checks_for(rules, &send);
            if !checks.is_empty() {
                takes.push(CapTake {
                    tenant: job.tenant,
                    checks,
                });
                whose.push(user);
            }
        }
        if takes.is_empty() {
            return Ok(());
        }
        let verdicts = store.take_caps(takes, now_ms).await?;
        for (user, v) in whose.into_iter().zip(verdicts) {
            if let CapVerdict::Full { cap, .. } = v {
                self.capped.insert(user.to_string(), cap);
            }
        }
        Ok(())
    }

    /// `user_id`'s directory entry, if they have one.
    pub fn profile(
        &self,
        job: &JobRecord,
        user_id: &str,
    ) -> Option<&herald_core::subscriber::Profile> {
        self.profiles.get(&job.tenant)?.get(user_id)
    }

    /// Where `user_id`'s copy of `job` goes at `now_ms`.
    pub fn resolve(&self, job: &JobRecord, user_id: &str, now_ms: i64) -> Resolved {
        if self.capped.contains_key(user_id) {
            return Resolved::Unsendable(Unsendable::Capped);
        }
        let who = self.addressee(job, user_id);
        match recipients::route(&who, &job.channel, &self.profiles, now_ms) {
            Route::To {
                addresses,
                devices,
                services,
                skip_channel_quiet,
                ..
            } => Resolved::Send {
                addresses,
                devices,
                services,
                skip_channel_quiet,
            },
            // Not reached with `fallback_to_id` off; sent as stored if it were.
            Route::AsStored => Resolved::Send {
                addresses: vec![user_id.to_string()],
                devices: false,
                services: Vec::new(),
                skip_channel_quiet: self.critical,
            },
            Route::Unsendable(why) => Resolved::Unsendable(why),
            Route::Quiet { until } => Resolved::Quiet(until),
        }
    }
}

/// The send-log error of a recipient held by their quiet hours.
pub(super) fn quiet_error(until: i64) -> String {
    format!(
        "quiet_hours: inside the subscriber's quiet hours until {}; \
         retry-failed sends it again",
        format_rfc3339_ms(until)
    )
}
