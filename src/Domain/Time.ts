import { ParseResult, Schema } from "effect"

/** Timestamps are stored and returned as ISO 8601 UTC with milliseconds, e.g. `2026-01-31T12:00:00.000Z`. */
export const Timestamp = Schema.String.annotations({
  title: "Timestamp",
  description: "ISO 8601 UTC timestamp with milliseconds",
  examples: ["2026-01-31T12:00:00.000Z"],
  format: "date-time"
})

export const nowIso = (): string => new Date().toISOString()

/** The time now, or `since` if it is later (a clock behind the one that wrote `since`): never before it. */
export const nowOrLater = (since: string): string => {
  const now = nowIso()
  return now < since ? since : now
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i

/**
 * An instant given as an ISO 8601 date (midnight UTC) or a date-time with `Z` or an offset, normalised to the
 * stored form. A date-time without a zone is refused: it would mean a different instant on every server.
 */
export const parseInstant = (input: string, rounding: "floor" | "ceil" = "floor"): string | undefined => {
  const date = DATE.exec(input)
  const dateTime = date === null ? DATE_TIME.exec(input) : null
  const parts = date ?? dateTime
  if (parts === null) return undefined
  const [, y, m, d] = parts
  const ms = Date.parse(date !== null ? `${input}T00:00:00Z` : input)
  if (Number.isNaN(ms)) return undefined
  // Reject calendar overflow (2026-02-31) that Date would silently roll into March.
  const check = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)))
  if (
    check.getUTCFullYear() !== Number(y) ||
    check.getUTCMonth() + 1 !== Number(m) ||
    check.getUTCDate() !== Number(d)
  ) {
    return undefined
  }
  if (dateTime !== null && (Number(dateTime[4]) > 23 || Number(dateTime[5]) > 59 || Number(dateTime[6] ?? 0) > 59)) {
    return undefined
  }
  // Stored times have milliseconds; a finer bound rounds outward so an exclusive `before` keeps what is before it.
  const fraction = /\.(\d+)/.exec(input)?.[1] ?? ""
  const finer = /[1-9]/.test(fraction.slice(3))
  return new Date(rounding === "ceil" && finer ? ms + 1 : ms).toISOString()
}

const instantFromString = (rounding: "floor" | "ceil") =>
  Schema.transformOrFail(
    Schema.String.annotations({
      description: "ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset",
      examples: ["2026-01-31", "2026-01-31T12:00:00Z", "2026-01-31T14:00:00+02:00"]
    }),
    Schema.String,
    {
      strict: true,
      decode: (input, _, ast) => {
        const parsed = parseInstant(input, rounding)
        return parsed === undefined
          ? ParseResult.fail(
              new ParseResult.Type(
                ast,
                input,
                "must be an ISO 8601 date (2026-01-31) or a date-time with Z or an offset (2026-01-31T12:00:00Z)"
              )
            )
          : ParseResult.succeed(parsed)
      },
      encode: ParseResult.succeed
    }
  )

/** Query/body form of an instant: accepts the forms above, decodes to the stored ISO form (finer digits dropped). */
export const InstantFromString = instantFromString("floor")
/** The same, rounding a sub-millisecond instant up: the form for an exclusive upper bound. */
export const InstantCeilFromString = instantFromString("ceil")
