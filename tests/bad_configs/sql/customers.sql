-- The customers export of query_sources.yaml.
SELECT id, name, updated_at FROM public.customers
