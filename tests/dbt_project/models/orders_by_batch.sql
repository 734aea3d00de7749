-- A microbatch model whose second day's batch fails on purpose: the run ends "partial success".
{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='ordered_at',
          batch_size='day', begin='2026-01-01', lookback=0, concurrent_batches=False) }}
select order_id, cast(ordered_at as date) as ordered_at, amount
from {{ ref('raw_orders') }}
{% if model.batch and model.batch.event_time_start.day == 2 %} where no_such_column > 0 {% endif %}
