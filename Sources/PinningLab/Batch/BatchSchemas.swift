/// The JSON Schemas (draft 2020-12) of the batch protocol. `pinlab check --print-schema batch-in|batch-out` prints
/// them; the tests validate real documents and answers against them with Python's jsonschema.
public enum BatchSchemas {
    /// The document a harness reads: ``BatchDocument``.
    public static let input: String = #"""
    {
      "$schema": "https://json-schema.org/draft/2020-12/schema",
      "$id": "https://pinninglab.test/schemas/batch-in-1.json",
      "title": "pinlab batch document (what a batch harness reads on standard input and from $PINLAB_BATCH)",
      "type": "object",
      "additionalProperties": false,
      "required": ["format", "formatVersion", "cellTimeoutSeconds", "cells"],
      "properties": {
        "format": {"const": "pinlab-batch"},
        "formatVersion": {"const": 1},
        "cellTimeoutSeconds": {"type": "number", "exclusiveMinimum": 0},
        "cells": {"type": "array", "items": {"$ref": "#/$defs/cell"}}
      },
      "$defs": {
        "cell": {
          "type": "object",
          "additionalProperties": false,
          "required": ["id", "scenario", "profile", "engine", "url", "host", "ip", "port", "trustFile", "pins"],
          "properties": {
            "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9.-]*/[a-z+-]+/[a-z0-9-]+$"},
            "scenario": {"type": "string", "pattern": "^[a-z0-9][a-z0-9.-]*$"},
            "profile": {"enum": ["none", "leaf-cert", "leaf-spki", "leaf-spki+backup", "intermediate-spki", "root-spki"]},
            "engine": {"type": "string", "minLength": 1},
            "url": {"type": "string", "pattern": "^https://[^/]+:[0-9]+/$"},
            "host": {"type": "string", "minLength": 1},
            "ip": {"type": "string", "minLength": 1},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "trustFile": {"type": "string", "minLength": 1},
            "pins": {
              "type": "object",
              "additionalProperties": false,
              "required": ["kind", "base64", "curl", "okhttp", "hex", "certificateHex", "domain", "includeSubdomains", "okhttpPattern"],
              "properties": {
                "kind": {"enum": ["spki-sha256", "certificate-sha256"]},
                "base64": {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z0-9+/]{43}=$"}},
                "curl": {"type": "string", "pattern": "^(sha256//[A-Za-z0-9+/]{43}=(;sha256//[A-Za-z0-9+/]{43}=)*)?$"},
                "okhttp": {"type": "array", "items": {"type": "string", "pattern": "^sha256/[A-Za-z0-9+/]{43}=$"}},
                "hex": {"type": "array", "items": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
                "certificateHex": {"type": "array", "items": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
                "domain": {"type": "string", "description": "the host the pins are declared for; empty for none"},
                "includeSubdomains": {"type": "boolean", "description": "the pins also apply to every subdomain of domain"},
                "okhttpPattern": {"type": "string", "description": "the scope as an OkHttp CertificatePinner pattern"}
              }
            },
            "clientIdentity": {
              "type": "object",
              "additionalProperties": false,
              "required": ["certificateFile", "keyFile"],
              "properties": {
                "certificateFile": {"type": "string", "minLength": 1},
                "keyFile": {"type": "string", "minLength": 1},
                "pkcs12File": {"type": "string", "minLength": 1},
                "pkcs12Password": {"type": "string"}
              }
            }
          }
        }
      }
    }
    """#

    /// One line of a harness's standard output: ``BatchResult``.
    public static let output: String = #"""
    {
      "$schema": "https://json-schema.org/draft/2020-12/schema",
      "$id": "https://pinninglab.test/schemas/batch-out-1.json",
      "title": "pinlab batch answer (one JSON object per line of the harness's standard output, one per cell)",
      "type": "object",
      "additionalProperties": false,
      "required": ["id", "claim"],
      "properties": {
        "id": {"type": "string", "minLength": 1, "description": "the cell's id from the batch document"},
        "claim": {"enum": ["accepted", "refused"], "description": "accepted: the client sent its request"},
        "detail": {"type": "string"},
        "category": {"enum": ["pin-mismatch", "chain-invalid", "hostname", "client-auth", "protocol", "timeout", "other"]},
        "milliseconds": {"type": "number", "minimum": 0}
      }
    }
    """#
}
