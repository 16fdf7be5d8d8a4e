//! Fallback routes when a timer's step ends: the step's outcome goes in the
//! send log with its step index, and, when the route's next step lists that
//! outcome in its `on`, the same completion moves the timer to that step
//! (its channel, address type, due time), so the store writes both in one
//! transaction: a step is never lost or sent twice across a crash. Which
//! step comes next is `herald_core::route::next`.

use std::sync::Arc;

use herald_core::route::{self, StepEnd};
use herald_core::timer::Routing;
use herald_store::{Completion, CompletionOutcome, NextStep, TimerRecord, Unsendable};

/// The routing of a timer with a fallback route; `None` for any other.
pub(crate) fn routing_of(row: &TimerRecord) -> Option<Arc<Routing>> {
    row.route_step()?;
    Some(Arc::new(Routing::parse(row.routing.as_deref())))
}

/// How an outcome ends a step; `None` when it does not (the step is tried
/// again later: a retry, a deferral).
fn step_end(o: &CompletionOutcome) -> Option<StepEnd> {
    Some(match o {
        CompletionOutcome::Done => StepEnd::Delivered,
        CompletionOutcome::Unsendable(Unsendable::NoAddress) => StepEnd::NoAddress,
        CompletionOutcome::Unsendable(Unsendable::OptedOut) => StepEnd::OptedOut,
        CompletionOutcome::Unsendable(Unsendable::NoGrant) => StepEnd::NoGrant,
        CompletionOutcome::Failed
        | CompletionOutcome::Dead
        | CompletionOutcome::Unsendable(Unsendable::TemplateError) => StepEnd::Failed,
        CompletionOutcome::Unsendable(Unsendable::Capped | Unsendable::Expired)
        | CompletionOutcome::InDoubt
        | CompletionOutcome::Read => StepEnd::Final,
        CompletionOutcome::Retry { .. } | CompletionOutcome::Deferred { .. } => return None,
    })
}

/// Marks `c` with the step it was, and with the step the route goes on to
/// when its outcome leads there.
pub(crate) fn advance(c: &mut Completion, routing: &Routing) {
    c.step = Some(routing.step);
    let Some(end) = step_end(&c.outcome) else {
        return;
    };
    let Some(next) = route::next(&routing.route, routing.step, end) else {
        return;
    };
    let Some((at_next, channel)) = routing.at_step(next) else {
        return;
    };
    let Some(text) = at_next.stored() else {
        return;
    };
    c.next = Some(NextStep {
        due_at: c.finished_at.saturating_add(next.delay_ms),
        channel,
        routing: text,
    });
}

#[cfg(test)]
mod tests {
    use herald_core::ChannelType;
    use herald_core::route::{Step, StepOn};

    use super::*;

    fn routing(step: u32) -> Routing {
        Routing {
            to: Some(ChannelType::Wechat),
            route: vec![
                Step {
                    channel: "wx".into(),
                    channel_type: ChannelType::Wechat,
                    on: vec![],
                    after_ms: None,
                    message: None,
                    template: None,
                },
                Step {
                    channel: "sms".into(),
                    channel_type: ChannelType::Sms,
                    on: vec![StepOn::NoAddress, StepOn::Failed],
                    after_ms: None,
                    message: None,
                    template: None,
                },
                Step {
                    channel: "mail".into(),
                    channel_type: ChannelType::Email,
                    on: vec![StepOn::Unread],
                    after_ms: Some(60_000),
                    message: None,
                    template: None,
                },
            ],
            step,
            ..Routing::default()
        }
    }

    fn completion(outcome: CompletionOutcome) -> Completion {
        Completion {
            timer_id: 1,
            tenant: herald_core::DEFAULT_TENANT,
            attempt: 1,
            outcome,
            channel: "wx".into(),
            idempotency_key: "k".into(),
            provider_msgid: None,
            status: None,
            error: None,
            started_at: 1_000,
            finished_at: 1_000,
            fence: None,
            step: None,
            next: None,
        }
    }

    #[test]
    fn an_outcome_the_next_step_lists_moves_the_timer_on() {
        let mut c = completion(CompletionOutcome::Unsendable(Unsendable::NoAddress));
        advance(&mut c, &routing(0));
        assert_eq!(c.step, Some(0));
        let next = c.next.expect("goes on to sms");
        assert_eq!((next.due_at, next.channel.as_str()), (1_000, "sms"));
        let r = Routing::parse(Some(&next.routing));
        assert_eq!(
            (r.step, r.to, r.check_read),
            (1, Some(ChannelType::Sms), false)
        );

        // Delivered by sms: the e-mail goes a minute later, if unread.
        let mut c = completion(CompletionOutcome::Done);
        advance(&mut c, &routing(1));
        let next = c.next.expect("an unread step");
        assert_eq!(next.due_at, 61_000);
        assert!(Routing::parse(Some(&next.routing)).check_read);
    }

    #[test]
    fn other_outcomes_are_final_or_not_a_step_end() {
        for (step, o) in [
            (0, CompletionOutcome::Done),
            (0, CompletionOutcome::Unsendable(Unsendable::OptedOut)),
            (0, CompletionOutcome::Unsendable(Unsendable::Capped)),
            (1, CompletionOutcome::Failed),
            (2, CompletionOutcome::Failed),
            (0, CompletionOutcome::Retry { next_due_at: 5 }),
        ] {
            let mut c = completion(o.clone());
            advance(&mut c, &routing(step));
            assert_eq!(c.next, None, "{o:?} at step {step}");
            assert_eq!(c.step, Some(step));
        }
    }
}
