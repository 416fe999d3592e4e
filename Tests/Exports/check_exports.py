#!/usr/bin/env python3
"""Independent checks of `pinlab export` output, with Python's own parsers (no PinningLab code).

  check_exports.py plist FILE    parse with plistlib; print the document as JSON (data as base64)
  check_exports.py nsc FILE      parse with xml.etree, check Android's documented element rules, print a summary
  check_exports.py reach FILE    parse a .mobileconfig with plistlib; decode each root payload with
                                 `openssl x509 -ext nameConstraints`; check its PayloadDescription states exactly
                                 those constraints ("name-constrained to: ...") or "NOT name-constrained"

  check_exports.py kotlin FILE   tokenize Kotlin (strings, comments), check brackets balance and the OkHttp/Ktor
                                 pinner's shape; print {"imports", "pins": [[host, pin]...], "calls"}
  check_exports.py schema FILE   validate a pins.json against Tests/Exports/pins.schema.json (python jsonschema)

Exit 0 and JSON on stdout when the file is well-formed and valid; exit 1 with one line per problem otherwise.
"""
import base64
import datetime
import json
import plistlib
import ipaddress
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def plist_to_json(value):
    if isinstance(value, dict):
        return {k: plist_to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plist_to_json(v) for v in value]
    if isinstance(value, bytes):
        return {"data": base64.b64encode(value).decode()}
    return value


# Android's network security configuration, as documented at
# https://developer.android.com/privacy-and-security/security-config#FileFormat:
# element -> (allowed attributes, allowed children with (min, max) occurrences, whether text is allowed).
UNBOUNDED = None
NSC_RULES = {
    "network-security-config": ({}, {"base-config": (0, 1), "domain-config": (0, UNBOUNDED), "debug-overrides": (0, 1)}, False),
    "base-config": ({"cleartextTrafficPermitted": "bool"}, {"trust-anchors": (0, 1), "certificateTransparency": (0, 1)}, False),
    "domain-config": ({"cleartextTrafficPermitted": "bool"},
                      {"domain": (1, UNBOUNDED), "trust-anchors": (0, 1), "pin-set": (0, 1), "certificateTransparency": (0, 1),
                       "domain-config": (0, UNBOUNDED)}, False),
    # Android 16 and later.
    "certificateTransparency": ({"enabled": "bool"}, {}, False),
    "domain": ({"includeSubdomains": "bool"}, {}, True),
    "debug-overrides": ({}, {"trust-anchors": (0, 1)}, False),
    "trust-anchors": ({}, {"certificates": (0, UNBOUNDED)}, False),
    "certificates": ({"src": "src", "overridePins": "bool"}, {}, False),
    "pin-set": ({"expiration": "date"}, {"pin": (0, UNBOUNDED)}, False),
    "pin": ({"digest": "digest"}, {}, True),
}
REQUIRED_ATTRIBUTES = {"certificates": ["src"], "pin": ["digest"]}
# The shortest pin-set expiration horizon accepted, in days from today (pinlab warns below it too).
MIN_PIN_HORIZON_DAYS = 90
HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$")


def check_attribute(kind, value):
    if kind == "bool":
        return value in ("true", "false")
    if kind == "src":
        return value in ("system", "user") or re.fullmatch(r"@raw/[a-z0-9_]+", value) is not None
    if kind == "date":
        try:
            datetime.date.fromisoformat(value)
            return re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) is not None
        except ValueError:
            return False
    if kind == "digest":
        return value == "SHA-256"
    return False


def check_nsc(path):
    problems = []
    root = ET.parse(path).getroot()
    if root.tag != "network-security-config":
        problems.append(f"root element is <{root.tag}>, not <network-security-config>")

    def walk(el, where):
        rule = NSC_RULES.get(el.tag)
        if rule is None:
            problems.append(f"{where}: <{el.tag}> is not an element of the network security config")
            return
        attributes, children, text_allowed = rule
        for name, value in el.attrib.items():
            if name not in attributes:
                problems.append(f"{where}: <{el.tag}> has no attribute '{name}'")
            elif not check_attribute(attributes[name], value):
                problems.append(f"{where}: <{el.tag} {name}=\"{value}\"> is not a valid {attributes[name]}")
        for name in REQUIRED_ATTRIBUTES.get(el.tag, []):
            if name not in el.attrib:
                problems.append(f"{where}: <{el.tag}> needs the attribute '{name}'")
        text = (el.text or "").strip()
        if text and not text_allowed:
            problems.append(f"{where}: <{el.tag}> holds text '{text}'")
        if el.tag == "domain" and not HOST.match(text):
            problems.append(f"{where}: <domain> '{text}' is not a host name")
        if el.tag == "pin":
            try:
                if len(base64.b64decode(text, validate=True)) != 32:
                    problems.append(f"{where}: <pin> '{text}' is not 32 bytes of base64 (SHA-256)")
            except ValueError:
                problems.append(f"{where}: <pin> '{text}' is not base64")
        counts = {}
        for child in el:
            if child.tag not in children:
                problems.append(f"{where}: <{child.tag}> is not allowed in <{el.tag}>")
            counts[child.tag] = counts.get(child.tag, 0) + 1
            walk(child, f"{where}/{child.tag}")
        for tag, (low, high) in children.items():
            n = counts.get(tag, 0)
            if n < low or (high is not None and n > high):
                problems.append(f"{where}: <{el.tag}> has {n} <{tag}>, allowed {low}..{high if high is not None else 'n'}")

    walk(root, root.tag)
    # On and after a pin-set's expiration Android stops enforcing its pins: a date in the past, or so close that
    # pinning switches itself off soon after a release, is a problem (the lab asks for its release horizon).
    today = datetime.date.today()
    for pin_set in root.iter("pin-set"):
        value = pin_set.get("expiration")
        if value is None or not check_attribute("date", value):
            continue
        days = (datetime.date.fromisoformat(value) - today).days
        if days < MIN_PIN_HORIZON_DAYS:
            problems.append(f"pin-set expiration {value} is {days} days away: Android stops enforcing the pins then "
                            f"(at least {MIN_PIN_HORIZON_DAYS} days: the app's release horizon)")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    domain_config = root.find("domain-config")
    pin_set = domain_config.find("pin-set") if domain_config is not None else None
    debug = root.find("debug-overrides")
    summary = {
        "domains": [{"host": d.text.strip(), "includeSubdomains": d.get("includeSubdomains")} for d in root.iter("domain")],
        "pins": [p.text.strip() for p in pin_set.findall("pin")] if pin_set is not None else [],
        "expiration": pin_set.get("expiration") if pin_set is not None else None,
        "anchors": [c.get("src") for c in domain_config.findall("trust-anchors/certificates")] if domain_config is not None else [],
        "debugAnchors": [c.get("src") for c in debug.findall("trust-anchors/certificates")] if debug is not None else [],
        "certificateTransparency": (domain_config.find("certificateTransparency").get("enabled")
                                    if domain_config is not None and domain_config.find("certificateTransparency") is not None
                                    else None),
    }
    print(json.dumps(summary))


def openssl_constraints(der):
    """(permitted, excluded) of a DER certificate as openssl prints them, IP ranges as address/prefix."""
    out = subprocess.run(["openssl", "x509", "-inform", "der", "-noout", "-ext", "nameConstraints"],
                         input=der, capture_output=True, check=True).stdout.decode()
    sets = {"Permitted": [], "Excluded": []}
    current = None
    for line in out.splitlines():
        text = line.strip()
        if text.rstrip(":") in sets:
            current = sets[text.rstrip(":")]
        elif current is not None and text.startswith("DNS:"):
            current.append(text[4:])
        elif current is not None and text.startswith("IP:"):
            address, mask = text[3:].split("/")
            prefix = bin(int(ipaddress.ip_address(mask))).count("1")
            current.append(f"{ipaddress.ip_address(address)}/{prefix}")
        elif current is not None and text:
            current.append(text)
    return sets["Permitted"], sets["Excluded"]


def listed(description, label):
    """The comma-separated items after `label` in a description, up to ';' or '('."""
    m = re.search(re.escape(label) + r"([^;(]*)", description)
    return None if m is None else [i.strip() for i in m.group(1).strip().rstrip(".,").split(",") if i.strip()]


def check_reach(path):
    with open(path, "rb") as f:
        profile = plistlib.load(f)
    problems, summary = [], []
    for payload in profile.get("PayloadContent", []):
        name = payload.get("PayloadDisplayName")
        description = payload.get("PayloadDescription", "")
        permitted, excluded = openssl_constraints(payload["PayloadContent"])
        if not permitted and not excluded:
            if "NOT name-constrained" not in description or "name-constrained to:" in description:
                problems.append(f"{name}: openssl finds no name constraints, but the description says: {description}")
        else:
            said = listed(description, "name-constrained to: ") or []
            said_excluded = listed(description, "excluded: ") or []
            if "NOT name-constrained" in description or sorted(said) != sorted(permitted) \
                    or sorted(said_excluded) != sorted(excluded):
                problems.append(f"{name}: openssl finds permitted {permitted} excluded {excluded}, "
                                f"but the description says: {description}")
        summary.append({"name": name, "permitted": permitted, "excluded": excluded, "description": description})
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(json.dumps(summary))


def kotlin_tokens(text):
    """(kind, value, line) for strings, words and brackets; comments dropped. Raises on an unterminated string."""
    out, i, line = [], 0, 1
    while i < len(text):
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError(f"line {line}: unterminated comment")
            line += text.count("\n", i, end)
            i = end + 2
        elif c == '"':
            j, value = i + 1, ""
            while j < len(text) and text[j] != '"':
                if text[j] == "\n":
                    raise ValueError(f"line {line}: unterminated string")
                if text[j] == "\\":
                    j += 1
                value += text[j]
                j += 1
            if j >= len(text):
                raise ValueError(f"line {line}: unterminated string")
            out.append(("string", value, line))
            i = j + 1
        elif c.isalnum() or c in "_.":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] in "_."):
                j += 1
            out.append(("word", text[i:j], line))
            i = j
        elif c in "()[]{}":
            out.append(("bracket", c, line))
            i += 1
        else:
            i += 1
    return out


def check_kotlin(path):
    text = open(path, encoding="utf-8").read()
    problems = []
    try:
        tokens = kotlin_tokens(text)
    except ValueError as e:
        print(str(e))
        sys.exit(1)
    stack = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for kind, value, line in tokens:
        if kind != "bracket":
            continue
        if value in "([{":
            stack.append((value, line))
        elif not stack or stack[-1][0] != pairs[value]:
            problems.append(f"line {line}: '{value}' does not close anything")
        else:
            stack.pop()
    problems += [f"line {line}: '{b}' is never closed" for b, line in stack]
    imports = [tokens[i + 1][1] for i, t in enumerate(tokens[:-1]) if t == ("word", "import", t[2])]
    pins, calls = [], []
    for i, (kind, value, line) in enumerate(tokens):
        if kind == "word":
            calls.append(value.lstrip("."))
        if kind == "word" and value.endswith("add") and i + 3 < len(tokens) and tokens[i + 1][1] == "(":
            if tokens[i + 2][0] == "string" and tokens[i + 3][0] == "string":
                host, pin = tokens[i + 2][1], tokens[i + 3][1]
                if not pin.startswith("sha256/") or len(base64.b64decode(pin[7:], validate=True)) != 32:
                    problems.append(f"line {line}: '{pin}' is not sha256/ and 32 bytes of base64")
                pins.append([host, pin[7:]])
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(json.dumps({"imports": imports, "pins": pins, "calls": calls}))


def check_schema(path):
    import jsonschema
    schema_path = __file__.rsplit("/", 1)[0] + "/pins.schema.json"
    with open(schema_path) as f:
        schema = json.load(f)
    with open(path) as f:
        doc = json.load(f)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        print("\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors))
        sys.exit(1)
    print(json.dumps(doc))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("plist", "nsc", "reach", "kotlin", "schema"):
        print(__doc__)
        sys.exit(2)
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "plist":
        with open(path, "rb") as f:
            print(json.dumps(plist_to_json(plistlib.load(f))))
    elif kind == "reach":
        check_reach(path)
    elif kind == "kotlin":
        check_kotlin(path)
    elif kind == "schema":
        check_schema(path)
    else:
        check_nsc(path)


if __name__ == "__main__":
    main()
