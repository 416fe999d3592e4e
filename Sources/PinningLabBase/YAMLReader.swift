// The one reader of YAML node trees, for PKI specs (`SpecParser`) and scenario files (`ScenarioLoader`): composing
// the text, describing what a node is, and checking that a node is the mapping, single value or list a field needs.
// Each caller turns a `YAMLReader.Fault` into its own error type (PKIError, ScenarioError), with its own codes.
package import Yams

package struct YAMLReader {
    /// The kinds of problem the reader itself finds; everything else is the caller's business.
    package enum Fault: Sendable {
        case syntax, duplicateKeys, notAMapping, wrongType, unknownField, missingField
    }

    /// Makes the caller's error for a fault at `node` (nil: the document as a whole) in `field` (a dotted path,
    /// "" for the top level). `line` and `column` are 1-based, from the node or from the YAML parser.
    package typealias Raise = (
        _ fault: Fault, _ line: Int?, _ column: Int?, _ field: String, _ problem: String, _ fix: String
    ) -> any Error

    package let raise: Raise

    package init(raise: @escaping Raise) {
        self.raise = raise
    }

    package func fail(_ fault: Fault, _ node: Node?, _ field: String, _ problem: String, fix: String) -> any Error {
        raise(fault, node?.mark?.line, node?.mark?.column, field, problem, fix)
    }

    /// The text's node tree, nil for an empty document; a syntax error or a key written twice is raised with its
    /// line and column. Every scalar is text (the `basic` resolver): the readers take values as strings and check
    /// them themselves, and Yams's default resolver matches each scalar against seven regular expressions, which
    /// was most of the time `pinlab check` took to load the catalogue.
    package func compose(_ text: String) throws -> Node? {
        do {
            return try Yams.compose(yaml: text, .basic)
        } catch let error as YamlError {
            let fix =
                "check indentation and quoting (a value containing ': ' or starting with '[', '{', '*' or '&' "
                + "must be quoted)."
            switch error {
            case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
                .composer(let context, let problem, let mark, _):
                let ctx = context.map { " (\($0.text))" } ?? ""
                throw raise(.syntax, mark.line, mark.column, "", "invalid YAML: \(problem)\(ctx).", fix)
            case .duplicatedKeysInMapping(let duplicates, let context):
                let keys = duplicates.map { "'\($0)'" }.joined(separator: ", ")
                throw raise(
                    .duplicateKeys, context.mark.line, context.mark.column, "",
                    "the key(s) \(keys) appear more than once in the same mapping.", "keep one of each key.")
            default:
                throw raise(.syntax, nil, nil, "", "invalid YAML: \(error).", fix)
            }
        }
    }

    /// A value as a message quotes it: at most 60 characters, then `…` (a 50 MB value is not echoed back).
    package static func excerpt(_ value: String) -> String {
        value.count > 60 ? value.prefix(60) + "…" : value
    }

    /// What a node is, for messages: "the single value 'x'", "a list", "a mapping", "an alias".
    package static func describe(_ node: Node) -> String {
        switch node {
        case .scalar(let s): return "the single value '\(excerpt(s.string))'"
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        case .alias: return "an alias"
        }
    }

    /// A mapping's key/value pairs in file order; with `allowed`, a key not in it is an unknown field (with a
    /// "did you mean" hint).
    package func mapping(
        _ node: Node, _ field: String, allowed: [String]? = nil, fix: @autoclosure () -> String? = nil
    ) throws -> Node.Mapping {
        guard let m = node.mapping else {
            let what = field.isEmpty ? "the file" : "`\(field)`"
            throw fail(
                .notAMapping, node, field, "expected a mapping of `key: value` lines, found \(Self.describe(node)).",
                fix: fix() ?? allowed.map { "write the fields \($0.joined(separator: ", ")) indented under \(what)." }
                    ?? "write `key: value` lines indented under \(what).")
        }
        if let allowed {
            for (k, _) in m {
                let name = k.string ?? ""
                guard allowed.contains(name) else {
                    let hint = didYouMean(name, allowed)
                    throw fail(
                        .unknownField, k, Self.path(field, name), "unknown field '\(name)'.",
                        fix: "\(hint.isEmpty ? "" : hint + " ")Fields allowed here: \(allowed.joined(separator: ", "))."
                    )
                }
            }
        }
        return m
    }

    /// The value of `key` in a mapping, or a missing-field error at the mapping's node.
    package func required(
        _ m: Node.Mapping, _ key: String, in parent: Node, _ field: String, fix: @autoclosure () -> String
    ) throws -> Node {
        guard let v = m[key] else {
            throw fail(
                .missingField, parent, Self.path(field, key), "the required field '\(key)' is missing.", fix: fix())
        }
        return v
    }

    /// A single value.
    package func string(_ node: Node, _ field: String, fix: @autoclosure () -> String) throws -> String {
        guard case .scalar(let s) = node else {
            throw fail(
                .wrongType, node, field, "expected a single text value, found \(Self.describe(node)).", fix: fix())
        }
        return s.string
    }

    /// A list of single values, each with its node (for the line of a later error). With `singleAllowed`, one value
    /// stands for a list of one.
    package func strings(
        _ node: Node, _ field: String, fix: @autoclosure () -> String, singleAllowed: Bool = false
    ) throws -> [(String, Node)] {
        guard let seq = node.sequence else {
            if case .scalar(let s) = node {
                if singleAllowed { return [(s.string, node)] }
                if !s.string.isEmpty {
                    throw fail(
                        .wrongType, node, field, "expected a list, found the single value '\(Self.excerpt(s.string))'.",
                        fix: "write it as a list: [\(Self.excerpt(s.string))]. \(fix())")
                }
            }
            throw fail(.wrongType, node, field, "expected a list, found \(Self.describe(node)).", fix: fix())
        }
        return try seq.enumerated().map { i, item in (try string(item, "\(field)[\(i)]", fix: fix()), item) }
    }

    /// `parent.key`, or `key` at the top level.
    package static func path(_ parent: String, _ key: String) -> String {
        parent.isEmpty ? key : "\(parent).\(key)"
    }
}
