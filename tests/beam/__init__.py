"""Tests of the Beam sink, ``vectordb.beam``."""
