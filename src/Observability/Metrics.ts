/** The service's metrics, exported over OTLP with the traces when an endpoint is configured. */
import { Metric, MetricBoundaries } from "effect"

/** Seconds, by `http.route`, `http.request.method` and `http.response.status_code`. */
export const requestDuration = Metric.histogram(
  "http.server.request.duration",
  MetricBoundaries.exponential({ start: 0.0005, factor: 2, count: 16 }),
  "Duration of HTTP server requests, in seconds"
)

/** Delivery attempts, by `outcome` (`succeeded` | `failed`). */
export const deliveryAttempts = Metric.counter("webhook.delivery.attempts", {
  description: "Webhook delivery attempts",
  incremental: true
})

/** Milliseconds from when an attempt was due to when it started. */
export const deliveryLag = Metric.histogram(
  "webhook.delivery.lag",
  MetricBoundaries.exponential({ start: 1, factor: 2, count: 18 }),
  "Milliseconds between an attempt falling due and starting"
)

/** Deliveries waiting for an attempt (sampled). */
export const pendingDeliveries = Metric.gauge("webhook.deliveries.pending", {
  description: "Deliveries waiting for an attempt"
})

/** Requests refused with 429. */
export const rateLimitRejections = Metric.counter("http.rate_limit.rejections", {
  description: "Requests refused for being over the rate limit",
  incremental: true
})
