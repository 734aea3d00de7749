-- Fails on purpose when the project is built (status "error"); its child is then "skipped".
select * from {{ ref('orders') }} where {{ 'no_such_column' if var('break', true) else 'true' }} > 0
