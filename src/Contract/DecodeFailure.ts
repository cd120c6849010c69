/**
 * A decode failure as `validation_failed`, translated from the structure of the `ParseIssue` (its tags, paths and
 * the schemas' own message annotations), never by rewriting the formatted English text; the walk stops after
 * `MAX_PROBLEMS` problems, so a body with a hundred thousand bad elements costs no more than one with a few hundred.
 * Used by the server for every decode failure (src/Http/ErrorTranslation.ts) and by the endpoint that decodes its
 * own payload (src/Idempotency/Http.ts).
 */
import { Either, Option, ParseResult } from "effect"
import * as AST from "effect/SchemaAST"
import { type FieldIssue, ValidationFailed } from "../Domain/Errors.js"

/** The walk over a decode failure stops after this many problems. */
export const MAX_PROBLEMS = 300

/** A problem found in a decode failure: a type mismatch keeps its parts, so a union's can be merged. */
type Problem =
  | {
      readonly path: ReadonlyArray<PropertyKey>
      readonly expected: string
      readonly got: string
      readonly alternatives?: boolean
    }
  | { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }

interface Walk {
  readonly problems: Array<Problem>
  cut: boolean
}

/** At most this many characters of a value are quoted back. */
const MAX_QUOTE = 60

const quote = (actual: unknown): string => {
  const text =
    actual === undefined
      ? "undefined"
      : Either.getOrElse(
          Either.try(() => JSON.stringify(actual)),
          () => String(actual)
        )
  return text.length > MAX_QUOTE ? `${text.slice(0, MAX_QUOTE)}…` : text
}

/** What a schema expects, as ParseResult names it: its description, title or identifier, else the schema. */
const expectedOf = (ast: AST.AST): string =>
  AST.getDescriptionAnnotation(ast).pipe(
    Option.orElse(() => AST.getTitleAnnotation(ast)),
    Option.orElse(() => AST.getIdentifierAnnotation(ast)),
    Option.getOrElse(() => String(ast))
  )

/** The message the schema itself gives for this issue (its `message` annotation), if it has one. */
const annotated = (issue: ParseResult.ParseIssue): string | undefined => {
  if (!("ast" in issue) || Option.isNone(AST.getMessageAnnotation(issue.ast))) return undefined
  return ParseResult.ArrayFormatter.formatIssueSync(issue)[0]?.message
}

const walk = (issue: ParseResult.ParseIssue, path: ReadonlyArray<PropertyKey>, acc: Walk): void => {
  if (acc.problems.length >= MAX_PROBLEMS) {
    acc.cut = true
    return
  }
  switch (issue._tag) {
    case "Pointer":
      walk(issue.issue, path.concat(issue.path), acc)
      return
    case "Missing":
      acc.problems.push({ path, message: "is required" })
      return
    case "Unexpected":
      acc.problems.push({ path, message: "is not allowed (unknown or read-only field)" })
      return
    case "Forbidden":
      acc.problems.push({ path, message: "could not be checked" })
      return
    case "Type": {
      const message = issue.message ?? annotated(issue)
      acc.problems.push(
        message !== undefined ? { path, message } : { path, expected: expectedOf(issue.ast), got: quote(issue.actual) }
      )
      return
    }
    case "Refinement": {
      const message = issue.kind === "Predicate" ? annotated(issue) : undefined
      if (message !== undefined) acc.problems.push({ path, message })
      else walk(issue.issue, path, acc)
      return
    }
    case "Transformation": {
      const message = issue.kind === "Transformation" ? annotated(issue) : undefined
      if (message !== undefined) acc.problems.push({ path, message })
      else walk(issue.issue, path, acc)
      return
    }
    case "Composite": {
      const inner = Array.isArray(issue.issues) ? issue.issues : [issue.issues]
      if (!AST.isUnion(issue.ast)) {
        for (const each of inner) walk(each, path, acc)
        return
      }
      // A union reports one problem per member: merged into `must be one of: "a", "b" (got "c")`.
      const members: Walk = { problems: [], cut: false }
      for (const each of inner) walk(each, path, members)
      const first = members.problems[0]
      const samePlace = members.problems.every((problem) => fieldOf(problem.path) === fieldOf(path))
      if (first !== undefined && "expected" in first && samePlace && members.problems.every((p) => "expected" in p)) {
        const expected = members.problems.flatMap((problem) => ("expected" in problem ? [problem.expected] : []))
        acc.problems.push({ path, expected: expected.join(", "), got: first.got, alternatives: expected.length > 1 })
        return
      }
      acc.problems.push(...members.problems.slice(0, MAX_PROBLEMS - acc.problems.length))
      acc.cut ||= members.cut
      return
    }
  }
}

const fieldOf = (path: ReadonlyArray<PropertyKey>) => path.map(String).join(".")

const messageOf = (problem: Problem): string =>
  "message" in problem
    ? problem.message
    : problem.alternatives === true
      ? `must be one of: ${problem.expected} (got ${problem.got})`
      : `must be ${problem.expected} (got ${problem.got})`

/** The field problems of a decode failure, one entry per field (a field's several problems joined). */
export const fieldIssues = (
  issue: ParseResult.ParseIssue
): { readonly details: Array<FieldIssue>; readonly cut: boolean } => {
  const acc: Walk = { problems: [], cut: false }
  walk(issue, [], acc)
  const byField = new Map<string, Array<string>>()
  for (const problem of acc.problems) {
    const field = fieldOf(problem.path)
    byField.set(field, [...(byField.get(field) ?? []), messageOf(problem)])
  }
  return {
    details: Array.from(byField, ([field, messages]) => ({ field, message: messages.join("; or ") })),
    cut: acc.cut
  }
}

/** A decode failure as `validation_failed`; `fieldName` writes each field as the client knows it (a header's name). */
export const validationFailed = (
  error: ParseResult.ParseError,
  fieldName?: (field: string) => string
): ValidationFailed => {
  const { cut, details } = fieldIssues(error.issue)
  const named =
    fieldName === undefined ? details : details.map((issue) => ({ ...issue, field: fieldName(issue.field) }))
  return ValidationFailed.of(named, cut ? { atLeast: true } : undefined)
}
