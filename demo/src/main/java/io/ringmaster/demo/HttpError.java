package io.ringmaster.demo;

import java.util.Map;

/** A request the API refuses: the status, the reason for the JSON body, and any extra headers. */
final class HttpError extends RuntimeException {
  private final int status;
  private final Map<String, String> headers;

  HttpError(int status, String reason) {
    this(status, reason, Map.of());
  }

  HttpError(int status, String reason, Map<String, String> headers) {
    super(reason, null, false, false);
    this.status = status;
    this.headers = Map.copyOf(headers);
  }

  static HttpError methodNotAllowed(String method, String path, String allow) {
    return new HttpError(405, "method " + method + " not allowed on " + path + "; allowed: " + allow,
        Map.of("Allow", allow));
  }

  int status() {
    return status;
  }

  Map<String, String> headers() {
    return headers;
  }
}
