select count(*) as n from {{ ref('broken') }}
