# SPDX-License-Identifier: Apache-2.0
"""Validates T4 results files against the T4 results schema.

usage: t4_validate.py SCHEMA FILE [FILE...]

jsonschema (Kernel Tuner depends on it) checks each FILE against SCHEMA (tests/data/t4/, the copy
of Kernel Tuner's kernel_tuner/schema/T4/1.0.0/results-schema.json). Beyond the schema, which
requires little, each result must have a configuration, and every measurement a name and a value.
Exit 0 when every file is valid, 1 with the first error otherwise.
"""
import json
import sys

import jsonschema


def main():
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in sys.argv[2:]:
        with open(path) as f:
            doc = json.load(f)
        try:
            jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
        except jsonschema.ValidationError as e:
            print(f"FAIL: {path}: {e.message} at {list(e.absolute_path)}")
            return 1
        results = doc.get("results", [])
        if not results:
            print(f"FAIL: {path}: no results")
            return 1
        for i, r in enumerate(results):
            if not r["configuration"] or any("name" not in m or "value" not in m
                                             for m in r.get("measurements", [])):
                print(f"FAIL: {path}: result {i} lacks a configuration or a measurement's name")
                return 1
        kinds = sorted({r["invalidity"] for r in results})
        print(f"ok   {path}: {len(results)} results valid against the T4 schema ({', '.join(kinds)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
