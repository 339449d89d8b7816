"""Run the public-API fuzz campaign outside pytest and print (or write) the report.

    python tests/fuzz/run.py                       # every catalogue value, report on stdout
    python tests/fuzz/run.py --fast --report FILE  # the fast subset of the catalogue
    python tests/fuzz/run.py --only dense.fixed_point conv.depth_scales

Exit status 1 when any call is BAD.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz import harness


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="the fast subset of the catalogue (default: every value)")
    parser.add_argument("--only", nargs="+", metavar="FUNCTION", help="registry names, e.g. dense.fixed_point")
    parser.add_argument("--module", nargs="+", help="registry modules, e.g. dense validation.networks")
    parser.add_argument("--report", help="write the report to this file")
    parser.add_argument("--timeout", type=float, default=harness.DEFAULT_TIMEOUT, help="per-call timeout in seconds")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("-v", "--verbose", action="store_true", help="print each BAD call as it happens (on stderr)")
    args = parser.parse_args(argv)
    functions = set(args.only or [])
    if args.module:
        functions |= {e.name for e in harness.REGISTRY if e.module in args.module}
    unknown = functions - set(harness.ENTRIES)
    if unknown:
        parser.error(f"not in the registry: {sorted(unknown)}")

    campaign = harness.run_campaign(
        not args.fast, functions or None, workers=args.workers, timeout=args.timeout, verbose=args.verbose
    )
    report = harness.format_report(campaign)
    if args.report:
        Path(args.report).write_text(report)
        print(
            f"{len(campaign.bad)} BAD of {len(campaign.outcomes)} calls in {campaign.wall:.1f} s; report: {args.report}"
        )
    else:
        print(report)
    return 1 if campaign.bad else 0


if __name__ == "__main__":
    sys.exit(main())
