/// The schemas the machine-readable reports follow. `pinlab check --print-schema json|junit` prints them, so CI
/// pipelines can validate reports with their own tools (`python3 -m jsonschema`, `xmllint --schema`).
public enum ReportSchemas {
    /// JSON Schema (draft 2020-12) of `pinlab check --format json`.
    public static let json: String = #"""
    {
      "$schema": "https://json-schema.org/draft/2020-12/schema",
      "$id": "https://pinninglab.test/schemas/check-report-1.json",
      "title": "pinlab check report",
      "type": "object",
      "additionalProperties": false,
      "required": ["tool", "formatVersion", "client", "engines", "profiles", "startedAt", "durationSeconds",
                   "summary", "verdicts", "scenarios"],
      "properties": {
        "tool": {"const": "pinlab"},
        "formatVersion": {"const": 1},
        "client": {"type": "string", "minLength": 1},
        "engines": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": true},
        "profiles": {"type": "array", "items": {"$ref": "#/$defs/profile"}, "uniqueItems": true},
        "startedAt": {"type": "string", "format": "date-time",
                      "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$"},
        "durationSeconds": {"type": "number", "minimum": 0},
        "summary": {
          "type": "object",
          "additionalProperties": false,
          "required": ["total", "pass", "fail", "disagree", "skipped", "unsupported", "error", "wrongReason"],
          "properties": {
            "total": {"type": "integer", "minimum": 0},
            "pass": {"type": "integer", "minimum": 0},
            "fail": {"type": "integer", "minimum": 0},
            "disagree": {"type": "integer", "minimum": 0},
            "skipped": {"type": "integer", "minimum": 0},
            "unsupported": {"type": "integer", "minimum": 0},
            "error": {"type": "integer", "minimum": 0},
            "wrongReason": {"type": "integer", "minimum": 0}
          }
        },
        "verdicts": {"type": "array", "items": {"$ref": "#/$defs/verdict"}},
        "scenarios": {"type": "array", "items": {"$ref": "#/$defs/scenario"}}
      },
      "$defs": {
        "profile": {"enum": ["none", "leaf-cert", "leaf-spki", "leaf-spki+backup", "intermediate-spki", "root-spki"]},
        "expectation": {"enum": ["accept", "refuse"]},
        "category": {"enum": ["pin-mismatch", "chain-invalid", "hostname", "client-auth", "protocol", "timeout", "other"]},
        "base64sha256": {"type": "string", "pattern": "^[A-Za-z0-9+/]{43}=$"},
        "verdict": {
          "type": "object",
          "additionalProperties": false,
          "required": ["scenario", "profile", "engine", "client", "expected", "verdict", "reason", "wrongReason", "timings"],
          "properties": {
            "scenario": {"type": "string", "pattern": "^[a-z0-9][a-z0-9.-]*$"},
            "profile": {"$ref": "#/$defs/profile"},
            "engine": {"type": "string", "minLength": 1},
            "client": {"type": "string", "minLength": 1},
            "expected": {"$ref": "#/$defs/expectation"},
            "observed": {"enum": ["accepted", "refused"]},
            "claim": {"enum": ["accepted", "refused"]},
            "verdict": {"enum": ["pass", "fail", "disagree", "skipped", "unsupported", "error"]},
            "reason": {"type": "string", "minLength": 1},
            "category": {"$ref": "#/$defs/category"},
            "expectedCategory": {"$ref": "#/$defs/category"},
            "wrongReason": {"type": "boolean"},
            "alert": {"type": "string"},
            "clientDetail": {"type": "string"},
            "evidence": {
              "type": "object",
              "additionalProperties": false,
              "required": ["connected", "handshakeCompleted", "applicationDataReceived"],
              "properties": {
                "connected": {"type": "boolean"},
                "handshakeCompleted": {"type": "boolean"},
                "applicationDataReceived": {"type": "boolean"},
                "requestLine": {"type": "string"},
                "alertReceived": {"type": "string"},
                "alertSent": {"type": "string"},
                "serverError": {"type": "string"},
                "negotiatedVersion": {"type": "string"},
                "cipherSuite": {"type": "string"},
                "sni": {"type": "string"},
                "clientCertificateSubject": {"type": "string"},
                "handshakeMilliseconds": {"type": "number", "minimum": 0}
              }
            },
            "timings": {
              "type": "object",
              "additionalProperties": false,
              "required": ["clientMilliseconds"],
              "properties": {
                "clientMilliseconds": {"type": "number", "minimum": 0},
                "handshakeMilliseconds": {"type": "number", "minimum": 0}
              }
            }
          },
          "allOf": [
            {"if": {"properties": {"verdict": {"enum": ["pass", "fail", "disagree"]}}},
             "then": {"required": ["observed"]}}
          ]
        },
        "link": {
          "type": "object",
          "additionalProperties": false,
          "required": ["name", "role", "subject", "issuer", "keyName", "keyType", "spkiSHA256", "certificateSHA256",
                       "onTheWire", "matchedBy"],
          "properties": {
            "name": {"type": "string"},
            "role": {"enum": ["root", "intermediate", "leaf", "client"]},
            "subject": {"type": "string"},
            "issuer": {"type": "string"},
            "keyName": {"type": "string"},
            "keyType": {"type": "string"},
            "spkiSHA256": {"$ref": "#/$defs/base64sha256"},
            "certificateSHA256": {"$ref": "#/$defs/base64sha256"},
            "onTheWire": {"type": "boolean"},
            "matchedBy": {"type": "array", "items": {"$ref": "#/$defs/profile"}, "uniqueItems": true}
          }
        },
        "scenario": {
          "type": "object",
          "additionalProperties": false,
          "required": ["id", "title", "teaching", "trust", "pinned", "clientAuth", "expected", "chain", "pins"],
          "properties": {
            "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9.-]*$"},
            "title": {"type": "string", "minLength": 1},
            "teaching": {"type": "string", "minLength": 1},
            "trust": {"type": "string", "minLength": 1},
            "pinned": {"type": "string", "minLength": 1},
            "clientAuth": {"enum": ["none", "optional", "required"]},
            "presents": {"type": "string"},
            "expected": {
              "type": "object",
              "propertyNames": {"$ref": "#/$defs/profile"},
              "additionalProperties": {"$ref": "#/$defs/expectation"}
            },
            "chain": {"type": "array", "items": {"$ref": "#/$defs/link"}},
            "pins": {
              "type": "object",
              "propertyNames": {"$ref": "#/$defs/profile"},
              "additionalProperties": {"type": "array", "items": {"$ref": "#/$defs/base64sha256"}}
            }
          }
        }
      }
    }
    """#

    /// XML Schema of `pinlab check --format junit`: the common JUnit report layout (as read by Jenkins, GitLab,
    /// GitHub Actions reporters), with numeric attributes typed.
    public static let junitXSD: String = #"""
    <?xml version="1.0" encoding="UTF-8"?>
    <xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
      <xs:simpleType name="seconds">
        <xs:restriction base="xs:decimal"><xs:minInclusive value="0"/></xs:restriction>
      </xs:simpleType>
      <xs:complexType name="outcome" mixed="true">
        <xs:attribute name="message" type="xs:string" use="required"/>
        <xs:attribute name="type" type="xs:string" use="required"/>
      </xs:complexType>
      <xs:element name="failure" type="outcome"/>
      <xs:element name="error" type="outcome"/>
      <xs:element name="skipped">
        <xs:complexType>
          <xs:attribute name="message" type="xs:string" use="required"/>
        </xs:complexType>
      </xs:element>
      <xs:element name="system-out" type="xs:string"/>
      <xs:element name="system-err" type="xs:string"/>
      <xs:element name="property">
        <xs:complexType>
          <xs:attribute name="name" type="xs:string" use="required"/>
          <xs:attribute name="value" type="xs:string" use="required"/>
        </xs:complexType>
      </xs:element>
      <xs:element name="properties">
        <xs:complexType>
          <xs:sequence><xs:element ref="property" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
        </xs:complexType>
      </xs:element>
      <xs:element name="testcase">
        <xs:complexType>
          <xs:sequence>
            <xs:choice minOccurs="0" maxOccurs="1">
              <xs:element ref="failure"/>
              <xs:element ref="error"/>
              <xs:element ref="skipped"/>
            </xs:choice>
            <xs:element ref="system-out" minOccurs="0"/>
            <xs:element ref="system-err" minOccurs="0"/>
          </xs:sequence>
          <xs:attribute name="name" type="xs:string" use="required"/>
          <xs:attribute name="classname" type="xs:string" use="required"/>
          <xs:attribute name="time" type="seconds" use="required"/>
        </xs:complexType>
      </xs:element>
      <xs:element name="testsuite">
        <xs:complexType>
          <xs:sequence>
            <xs:element ref="properties" minOccurs="0"/>
            <xs:element ref="testcase" minOccurs="0" maxOccurs="unbounded"/>
            <xs:element ref="system-out" minOccurs="0"/>
            <xs:element ref="system-err" minOccurs="0"/>
          </xs:sequence>
          <xs:attribute name="name" type="xs:string" use="required"/>
          <xs:attribute name="package" type="xs:string"/>
          <xs:attribute name="id" type="xs:nonNegativeInteger"/>
          <xs:attribute name="tests" type="xs:nonNegativeInteger" use="required"/>
          <xs:attribute name="failures" type="xs:nonNegativeInteger" use="required"/>
          <xs:attribute name="errors" type="xs:nonNegativeInteger" use="required"/>
          <xs:attribute name="skipped" type="xs:nonNegativeInteger"/>
          <xs:attribute name="time" type="seconds" use="required"/>
          <xs:attribute name="timestamp" type="xs:dateTime"/>
          <xs:attribute name="hostname" type="xs:string"/>
        </xs:complexType>
      </xs:element>
      <xs:element name="testsuites">
        <xs:complexType>
          <xs:sequence>
            <xs:element ref="testsuite" minOccurs="0" maxOccurs="unbounded"/>
          </xs:sequence>
          <xs:attribute name="name" type="xs:string"/>
          <xs:attribute name="tests" type="xs:nonNegativeInteger" use="required"/>
          <xs:attribute name="failures" type="xs:nonNegativeInteger" use="required"/>
          <xs:attribute name="errors" type="xs:nonNegativeInteger" use="required"/>
          <xs:attribute name="skipped" type="xs:nonNegativeInteger"/>
          <xs:attribute name="time" type="seconds"/>
        </xs:complexType>
      </xs:element>
    </xs:schema>
    """#
}
