-- A provider notification is stored once, by its notify_id: a replayed copy (the provider's retry,
-- or a captured request sent again) is answered from the record without touching the order.
-- Copies recorded before this migration had no effect of their own (DUPLICATE); the first is kept.
DELETE FROM payment_notifications a USING payment_notifications b
 WHERE a.notify_id = b.notify_id AND a.id > b.id;
CREATE UNIQUE INDEX payment_notifications_notify_id ON payment_notifications (notify_id);
