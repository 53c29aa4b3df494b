# Names that vulture (`make lint`) reports as unused but that a framework calls or reads.
# Vulture matches by name only: listing a name here keeps every definition of it. This file is
# read by vulture alone; it is never imported, type-checked or collected as a test.

# The list of plugins pytest registers from a plugin module (plugin/entry_point.py).
pytest_plugins

# pytest hooks of the plugin: pytest calls them by name (module functions and the methods of
# the results writer it registers).
pytest_configure
pytest_unconfigure
pytest_runtest_protocol
pytest_runtest_logreport
pytest_runtest_logfinish
pytest_collectreport
pytest_sessionfinish
# ... and of the tripwire plugin, with its sentinel item's methods that pytest calls, and the
# hook through which the machinery audit judges each registration.
pytest_configure_node
pytest_collection_modifyitems
pytest_plugin_registered
pytest_sessionstart
pytest_terminal_summary
pytest_runtest_setup
pytest_runtest_call
pytest_runtest_teardown
runtest
reportinfo
# ... and of the harness plugin.
pytest_collection
pytest_testnodedown
# ... and of the collection plugin (`plan`).
pytest_collection_finish
# ... and of the reads recorder (`vet`).
pytest_make_collect_report
pytest_fixture_setup

# xml.etree's parser calls its target's `doctype(name, pubid, system)`; the refusing target
# raises before it reads them.
doctype
pubid
system

# Parameters a protocol imposes: `__exit__(*exc_info)`, and an `os.replace(src, dst)` stand-in.
exc_info
src
dst

# Ledger record fields that only the generic JSON encoder reads (through dataclasses.fields).
version
algorithm
tool
property_pin_id
property_pin_sha256
network_enforcement
expected_skips_left_out
# ... and a field of the harness record.
pythonpath
# ... and fields of the vet ledger, written for the reviewer, derived from its trials.
operators_tried
killed_by
survived
statuses_seen
requested

# A field of the properties pin record: read from the pin, validated by the schema, shown to
# reviewers in the pin itself, never needed by the gate's decisions.
claim

# pytest reads these by name: module marks, an autouse fixture, fixtures used through usefixtures.
pytestmark
hermetic_git
child_runs_without_hypothesis
vet_cache_of_its_own
vet_cache_of_the_session
coverage_data_stays_writable
bare_pytest_children
flaky_fails
needs_network_namespace
needs_mount_layer
needs_pid_layer
writing_bytecode
# A fixture a test requests by parameter for its effect on PATH alone.
hanging_git
# A fixture a test asks for by name (request.getfixturevalue) only for the option that needs it.
cov_path

# Dead in the gate today, kept until their module is next changed: git.file_at (tests
# only), git.tracked_files (called by nothing).
file_at
tracked_files

# An autouse-style fixture a test requests by name; HTMLParser calls its handlers by name.
clean_env
# An autouse fixture: pytest applies it to every test of its module.
no_ci
handle_starttag
handle_endtag
handle_data
attrs
# Ledger fields written for readers (combine's provenance, the plan's balancing): read by
# people and the schema, not by the gate's code.
ledger_ids
ledger_sha256s
balanced_by
colour
# xdist's option that lists the workers to start: the order plugin empties it for a rerun.
tx
# argparse calls it: the formatter of every argument added (cli/parser.py).
_get_formatter

# The docstring `@frozen` gives a record without one (frozen.py): `help()` and `pydoc` read it.
__doc__
