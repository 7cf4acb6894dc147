#!/usr/bin/env python3
"""Validates SV-COMP witness files (format 2.0, YAML) against the schemas beside this script.

Usage: validate.py [--schemas DIR] WITNESS.yml...
Prints one line per file ("ok: FILE (violation, 2 entries)" or "invalid: FILE: reason")
and exits with 1 when any file is invalid, 2 when jsonschema or PyYAML is missing.
"""
import json
import os
import sys

try:
    import jsonschema
    import yaml
    from referencing import Registry, Resource
except ImportError as e:  # pragma: no cover
    print(f"missing Python package ({e}); install with: pip install jsonschema pyyaml", file=sys.stderr)
    sys.exit(2)


def load_schemas(directory):
    registry = Registry()
    schemas = {}
    for name in ("common-2.0", "violation-witness-2.0", "correctness-witness-2.0"):
        with open(os.path.join(directory, f"{name}.schema.json"), encoding="utf-8") as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        registry = registry.with_resource(schema["$id"], Resource.from_contents(schema))
        schemas[name] = schema
    make = lambda s: jsonschema.Draft202012Validator(
        s, registry=registry, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    return make(schemas["violation-witness-2.0"]), make(schemas["correctness-witness-2.0"])


def ordering_errors(entries):
    """The rules about waypoint order that the schema cannot express."""
    errors = []
    for i, entry in enumerate(entries):
        segments = entry["content"]
        for j, seg in enumerate(segments):
            wps = [w["waypoint"] for w in seg["segment"]]
            if wps[-1]["action"] != "follow":
                errors.append(f"entry {i} segment {j}: the follow waypoint is not last")
            targets = [w for w in wps if w["type"] == "target"]
            last = j == len(segments) - 1
            if last and (not targets or wps[-1]["type"] != "target"):
                errors.append(f"entry {i}: the last segment does not end with the target waypoint")
            if not last and targets:
                errors.append(f"entry {i} segment {j}: a target waypoint before the last segment")
    return errors


def main(argv):
    directory = os.path.dirname(os.path.abspath(__file__))
    if len(argv) > 1 and argv[0] == "--schemas":
        directory, argv = argv[1], argv[2:]
    violation, correctness = load_schemas(directory)
    bad = 0
    for path in argv:
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            print(f"invalid: {path}: {e}")
            bad += 1
            continue
        if not isinstance(doc, list):
            print(f"invalid: {path}: a witness is a list of entries")
            bad += 1
            continue
        kinds = {e.get("entry_type") for e in doc if isinstance(e, dict)}
        if kinds == {"violation_sequence"}:
            validator, kind = violation, "violation"
        else:
            validator, kind = correctness, "correctness"
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
        if not errors and kind == "violation":
            errors = ordering_errors(doc)
        if errors:
            print(f"invalid: {path}: " + "; ".join(errors[:5]))
            bad += 1
        else:
            print(f"ok: {path} ({kind}, {len(doc)} entries)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
