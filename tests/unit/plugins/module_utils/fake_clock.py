# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A clock for the unit tests of retries and waits: stands in for ``time`` (``monotonic`` and ``sleep``);
sleeping advances it and is recorded, so backoff and deadlines are tested without waiting."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class FakeClock(object):
    def __init__(self, now=0.0):
        self.now = now
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds
