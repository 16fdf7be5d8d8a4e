-- Reminder lead times became configurable (issue 16): a subscription's bits
-- mean positions of the lead list, so the store keeps the list its
-- subscriptions were made under (`meta.reminder_leads`). A store that holds
-- subscriptions already made them under the only list there was.
INSERT INTO meta (key, value)
    SELECT 'reminder_leads', '5,10,15,20,25,30,35,40,45,50,55,60'
    WHERE EXISTS (SELECT 1 FROM reminders);
