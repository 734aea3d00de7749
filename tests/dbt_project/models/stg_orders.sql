{{ config(materialized='ephemeral') }}
select order_id, customer_id, cast(ordered_at as date) as ordered_at, region, amount
from {{ ref('raw_orders') }}
