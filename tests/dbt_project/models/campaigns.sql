{{ config(schema='marketing') }}
select region as campaign, 'search' as channel, region, 1000 as impressions, 50 as clicks, 10.0 as spend,
       count(*) as conversions
from {{ ref('stg_orders') }}
group by region
