{{ config(materialized='view') }}
select customer_id, min(region) as region, count(*) as signups
from {{ ref('stg_orders') }}
group by 1
