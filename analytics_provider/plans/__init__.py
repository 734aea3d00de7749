"""Plans and applies, shared by the features that make the service follow code or data (access,
deliveries, ``python -m analytics_provider.manage``): a plan's typed changes (:mod:`.plan`), the
resources they write and the hook's methods that write them (:mod:`.writes`), and the apply that
sends them in steps and says what went through (:mod:`.apply`). Nothing here knows a feature."""
