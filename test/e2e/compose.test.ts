// engine-independent: the Compose file as text; no database
/**
 * docker-compose.yml as docs/operations.md describes it (no Docker daemon is needed: the file is read): three
 * replicas of the service behind nginx on one address, sharing PostgreSQL, Redis and the public BASE_URL, nginx
 * trusted for X-Forwarded-For, and a health check on the port the server listens on.
 */
import { describe, expect, test } from "bun:test"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"

const ROOT = join(import.meta.dir, "..", "..")
const compose = Bun.YAML.parse(readFileSync(join(ROOT, "docker-compose.yml"), "utf8")) as {
  services: Record<string, any>
}
const { service, lb } = compose.services

describe("docker-compose.yml", () => {
  test("runs three replicas on PostgreSQL and Redis, with Jaeger, behind nginx on one published address", () => {
    expect(Object.keys(compose.services).sort()).toEqual(["jaeger", "lb", "postgres", "redis", "service"])
    expect(service.deploy.replicas).toBe(3)
    expect(service.ports).toBeUndefined()
    expect(service.environment.DATABASE_URL).toStartWith("postgres://")
    expect(service.environment.REDIS_URL).toBe("redis://redis:6379")
    expect(lb.image).toStartWith("nginx:")
    expect(lb.ports).toEqual([`${new URL(service.environment.BASE_URL).port}:80`])
    // nginx's pinned address is the one trusted proxy.
    expect(service.environment.TRUSTED_PROXIES).toBe(lb.networks.default.ipv4_address)
  })

  test("nginx's configuration is in the repository and sends every request to the replicas", () => {
    const [mount] = lb.volumes as Array<string>
    const file = join(ROOT, mount!.split(":")[0]!)
    expect(existsSync(file)).toBe(true)
    const conf = readFileSync(file, "utf8")
    expect(conf).toContain(`server service:${service.environment.PORT};`)
    expect(conf).toContain("proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;")
  })

  test("the health check asks the port the server listens on ($PORT), as the image's does", () => {
    const check = (service.healthcheck.test as Array<string>).join(" ")
    expect(check).toContain("process.env.PORT")
    expect(check).not.toContain("127.0.0.1:3000")
    const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8")
    expect(dockerfile).toContain("process.env.PORT")
  })
})
