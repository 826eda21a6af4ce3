-- Shared by the pgTAP suites, included right after "\set ECHO none" (which keeps this file out of
-- the expected output): quiet, unaligned TAP lines, and stop at the first error outside a test.
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off
\set ON_ERROR_ROLLBACK 1
\set ON_ERROR_STOP true
SET client_min_messages = error;
