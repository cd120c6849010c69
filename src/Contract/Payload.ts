import { Schema } from "effect"

/**
 * A request body schema that refuses unknown (and read-only) fields and reports every problem at once.
 * With `nonEmpty`, an empty object is refused too (a PUT that changes nothing is a mistake). `example`: a valid body,
 * published as the schema's `examples` (the request example /docs shows, and test/e2e/docs.test.ts sends).
 */
export const strictBody = <Fields extends Schema.Struct.Fields>(
  fields: Fields,
  identifier: string,
  options?: { readonly nonEmpty?: boolean; readonly example?: Schema.Struct.Encoded<Fields> }
) => {
  const struct = Schema.Struct(fields).annotations({
    identifier,
    ...(options?.example === undefined ? {} : { jsonSchema: { examples: [options.example] } }),
    parseOptions: { onExcessProperty: "error", errors: "all" }
  })
  return options?.nonEmpty === true
    ? struct.pipe(
        Schema.filter((body) => Object.keys(body).length > 0 || "must contain at least one field to change", {
          identifier,
          jsonSchema: { minProperties: 1 }
        })
      )
    : struct
}
