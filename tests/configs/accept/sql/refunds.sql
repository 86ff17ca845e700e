-- The refunds export of structured_source_every_key.yaml (rivet reads it before it connects).
SELECT id, amount, updated_at, created_at FROM billing.refunds
