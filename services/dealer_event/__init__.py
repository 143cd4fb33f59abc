"""dealer-event: table devices and supervisors in; canonical, hash-chained table events out."""
