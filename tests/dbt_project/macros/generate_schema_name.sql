{# A model's custom schema is its schema as written (marketing, finance), not "<target>_marketing". #}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ custom_schema_name | trim if custom_schema_name else target.schema }}
{%- endmacro %}
