//! The reminder leads a store's subscriptions were made under. A stored
//! subscription is a bitmap whose bits mean positions of the lead list
//! (`herald_core::reminder::Leads`), so the list the store was first served
//! with is kept in the store, and a node may only serve a list that extends
//! it (the same leads in the same order, new ones after).

use herald_core::reminder::Leads;
use herald_store::Store;

/// The `meta` key the lead list is kept under.
pub const META_KEY: &str = "reminder_leads";

fn encode(leads: &Leads) -> String {
    leads
        .minutes()
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn decode(stored: &str) -> Option<Leads> {
    let minutes: Option<Vec<u16>> = stored.split(',').map(|m| m.parse().ok()).collect();
    Leads::new(minutes?).ok()
}

/// Records `leads` as the store's list, or checks that they extend the one
/// it has. A store with no list has no subscription made under another one:
/// migration `0014_reminder_leads` recorded the default list in every store
/// that held subscriptions before lists could be configured.
pub async fn settle(store: &dyn Store, leads: &Leads) -> Result<(), String> {
    let stored = store
        .get_meta(META_KEY)
        .await
        .map_err(|e| format!("reading the stored reminder leads: {e}"))?;
    if let Some(s) = &stored {
        let before =
            decode(s).ok_or_else(|| format!("the stored reminder leads {s:?} are unreadable"))?;
        if !leads.extends(&before) {
            return Err(format!(
                "[reminders] leads_minutes {:?} does not extend the leads this store's \
                 subscriptions were made under, {:?}: stored reminders would change \
                 meaning. Keep those leads, in that order, and append new ones after them.",
                leads.minutes(),
                before.minutes()
            ));
        }
        if *leads == before {
            return Ok(());
        }
    }
    store
        .put_meta(META_KEY, &encode(leads))
        .await
        .map_err(|e| format!("storing the reminder leads: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leads(m: &[u16]) -> Leads {
        Leads::new(m.to_vec()).expect("leads")
    }

    #[tokio::test]
    async fn a_list_is_kept_and_may_only_grow_at_the_end() {
        let store = herald_store::open("sqlite::memory:", &Default::default())
            .await
            .expect("store");
        // A new store takes any list.
        settle(&*store, &leads(&[0, 1, 5])).await.expect("first");
        assert_eq!(
            store.get_meta(META_KEY).await.expect("read").as_deref(),
            Some("0,1,5")
        );
        settle(&*store, &leads(&[0, 1, 5])).await.expect("same");
        settle(&*store, &leads(&[0, 1, 5, 30]))
            .await
            .expect("appended");
        assert_eq!(
            store.get_meta(META_KEY).await.expect("read").as_deref(),
            Some("0,1,5,30")
        );
        for bad in [&[0, 1, 5][..], &[1, 0, 5, 30], &[5, 10]] {
            let e = settle(&*store, &leads(bad)).await.unwrap_err();
            assert!(e.contains("does not extend"), "{bad:?}: {e}");
        }
        store.put_meta(META_KEY, "nonsense").await.expect("write");
        assert!(settle(&*store, &leads(&[0])).await.is_err());
    }
}
