/** Field rules shared by records and request bodies. */
import { Effect, Schema } from "effect"
import { ValidationFailed } from "./Errors.js"

/** An optional field of a body or query: absent, or present with a valid value (never `undefined`). */
export const optional = <S extends Schema.Schema.All>(schema: S) => Schema.optionalWith(schema, { exact: true })

/**
 * A string whose surrounding spaces are trimmed before `checked` checks it. The JSON Schema of a transformation shows
 * only its encoded side, a bare string, so the rules the server enforces are declared on that side (`jsonSchema`):
 * what a client reads in the OpenAPI document.
 */
export const trimmedWith = (
  documented: { readonly description: string; readonly jsonSchema: Record<string, unknown> },
  checked: Schema.Schema<string, string>
) => Schema.compose(Schema.String.annotations(documented), checked)

/** A display name: trimmed, 1 to 100 characters. */
export const TrimmedName = trimmedWith(
  {
    description: "1 to 100 characters once surrounding spaces are trimmed",
    jsonSchema: { minLength: 1, maxLength: 100 }
  },
  Schema.Trim.pipe(
    Schema.minLength(1, { message: () => "must not be empty" }),
    Schema.maxLength(100, { message: () => "must be at most 100 characters" })
  )
)

/**
 * `TrimmedName` for a name that does not arrive in a request body (the CLI, a service called directly): the
 * trimmed name, or `validation_failed` on `field`. The rule stays the schema's; only the message is one line.
 */
export const validName =
  (field: string) =>
  (input: string): Effect.Effect<string, ValidationFailed> =>
    Effect.mapError(Schema.decodeUnknown(TrimmedName)(input), () =>
      ValidationFailed.field(field, "must be 1 to 100 characters")
    )

/** An absolute `http:` or `https:` URL of at most 2048 characters. */
export const HttpUrl = Schema.String.pipe(
  Schema.maxLength(2048, { message: () => "must be at most 2048 characters" }),
  Schema.filter(
    (value) =>
      (URL.canParse(value) && ["http:", "https:"].includes(new URL(value).protocol)) ||
      "must be an absolute http(s) URL"
  )
)
