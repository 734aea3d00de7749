select ordered_at as day, region, count(*) as orders, sum(amount) as revenue
from {{ ref('stg_orders') }}
group by 1, 2
