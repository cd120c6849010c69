/** The command line of a benchmark. */

/** The number after `--<name>` on the command line, or `fallback` when it is not given. */
export const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1]) : fallback
}
