"""Ops layer: the dashboard's page, scripts and styles (no Python). Imports nothing.

A package only so that setuptools ships these files as its package data;
:mod:`actorbroker.ops.dashboard` serves them.
"""
