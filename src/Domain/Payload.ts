import { Schema } from "effect"

/**
 * A request body schema that refuses unknown (and read-only) fields and reports every problem at once.
 * With `nonEmpty`, an empty object is refused too (a PUT that changes nothing is a mistake).
 */
export const strictBody = <Fields extends Schema.Struct.Fields>(
  fields: Fields,
  identifier: string,
  options?: { readonly nonEmpty?: boolean }
) => {
  const struct = Schema.Struct(fields).annotations({
    identifier,
    parseOptions: { onExcessProperty: "error", errors: "all" }
  })
  return options?.nonEmpty === true
    ? struct.pipe(
      Schema.filter((body) => Object.keys(body).length > 0 || "must contain at least one field to change", {
        identifier
      })
    )
    : struct
}

/** An optional field of a body or query: absent, or present with a valid value (never `undefined`). */
export const optional = <S extends Schema.Schema.All>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** A display name: trimmed, 1 to 100 characters. */
export const TrimmedName = Schema.Trim.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(100, { message: () => "must be at most 100 characters" })
)

/** An absolute `http:` or `https:` URL of at most 2048 characters. */
export const HttpUrl = Schema.String.pipe(
  Schema.maxLength(2048, { message: () => "must be at most 2048 characters" }),
  Schema.filter((value) =>
    URL.canParse(value) && ["http:", "https:"].includes(new URL(value).protocol) || "must be an absolute http(s) URL"
  )
)
