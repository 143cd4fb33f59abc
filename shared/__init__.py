"""The rule book every service trusts: rules, money, profiles and the event contracts."""
