"""Writing a Python benchmark's hal.bench/1 document: to --output, as JSON with --json, else as a
table (the caller's header and row format), then the errors. Shared by python_op_bench.py and
numpy_peer.py."""
import json


def emit(document, args, header, row):
    """Writes and prints `document`; `row(result)` formats one result line of the table.
    Returns the process's exit status: 1 when the document lists errors."""
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2)
            out.write("\n")
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(header)
        for r in document["results"]:
            print(row(r))
        for e in document["errors"]:
            print(f"FAILED {e['benchmark']}: {e['message']}")
    return 1 if document["errors"] else 0
