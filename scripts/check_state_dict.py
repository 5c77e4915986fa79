"""Checks that a safetensors file `cleave checkpoint export` wrote loads
into the PyTorch module the model was exported from with
load_state_dict(strict=True), without PyTorch: its names (less the
export wrapper's prefix, and less the tensors named with --ignore, the
values the exporter's optimizer folded, which the import warns about) and
shapes must be exactly the module's state_dict, as
scripts/export_real_models.py --state-dicts recorded it in models.json.

usage: check_state_dict.py EXPORT.safetensors models.json MODEL
           [--prefix P] [--ignore NAME]... [--absent NAME]...
           [--tied NAME=NAME]...
--absent: a state_dict entry the file cannot hold (rows of a table the
exporter never wrote); it must be missing, and only it. --tied: two names
of one tied parameter, whose exported values must be equal.
Prints "state_dict matches: N tensors" or the differences (exit 1).
"""
import json
import sys

from safetensors.numpy import load_file


def main():
    args = sys.argv[1:]
    prefix, ignore = "", set()
    while "--prefix" in args:
        i = args.index("--prefix")
        prefix = args[i + 1]
        del args[i:i + 2]
    while "--ignore" in args:
        i = args.index("--ignore")
        ignore.add(args[i + 1])
        del args[i:i + 2]
    absent, tied = set(), []
    while "--absent" in args:
        i = args.index("--absent")
        absent.add(args[i + 1])
        del args[i:i + 2]
    while "--tied" in args:
        i = args.index("--tied")
        tied.append(args[i + 1].split("=", 1))
        del args[i:i + 2]
    path, listed, model = args
    with open(listed) as f:
        expected = json.load(f)[model]["state_dict"]
    exported = {}
    tensors = load_file(path)
    for a, b in tied:
        if a not in tensors or b not in tensors:
            sys.exit("tied %s=%s: not both exported" % (a, b))
        if tensors[a].shape != tensors[b].shape or \
                not (tensors[a] == tensors[b]).all():
            sys.exit("tied %s=%s: the values differ" % (a, b))
    for name, array in tensors.items():
        if name in ignore:
            continue
        if not name.startswith(prefix):
            sys.exit("%s: not under the prefix '%s'" % (name, prefix))
        exported[name[len(prefix):]] = list(array.shape)
    missing = sorted(set(expected) - set(exported) - absent)
    present = sorted(absent & set(exported))
    if present:
        sys.exit("expected absent but exported: %s" % present)
    unexpected = sorted(set(exported) - set(expected))
    wrong = sorted(n for n in set(expected) & set(exported)
                   if expected[n] != exported[n])
    if missing or unexpected or wrong:
        sys.exit("load_state_dict(strict=True) would fail: missing %s, "
                 "unexpected %s, shapes differ %s" %
                 (missing, unexpected,
                  ["%s %s (module %s)" % (n, exported[n], expected[n])
                   for n in wrong]))
    print("state_dict matches: %d tensors" % len(exported))


if __name__ == "__main__":
    main()
