/// The OpenAPI 3.1 description of the API, served at `GET /openapi.json` and committed as
/// docs/reference/openapi.json (a test keeps the two equal; `pushworker api --openapi` prints it).
/// Every path, request body, response and error of docs/reference/api.md is here; schemathesis
/// (scripts/api-schemathesis.sh) checks the running API against it.
public enum OpenAPIDocument {
    /// The document, as served (UTF-8 JSON, two-space indent, a final newline).
    public static let text = json + "\n"

    static let json = ##"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "pushworker API",
    "version": "1.0.0",
    "description": "The operators' HTTP API of pushworker (`pushworker api`): jobs to the jobs topic, and campaign control (pause, resume, cancel, throttle, deadline, status). Every /v1 endpoint needs `Authorization: Bearer <token>` (a token of PUSHWORKER_API_TOKENS_FILE). Every failure is `{\"error\": {\"code\", \"message\", \"field\"?, \"problems\"?}}`. Reference: docs/reference/api.md."
  },
  "tags": [
    {
      "name": "jobs",
      "description": "Fan-out jobs to the jobs topic."
    },
    {
      "name": "campaigns",
      "description": "Campaign control (docs/campaigns.md)."
    },
    {
      "name": "operations",
      "description": "Health, readiness, metrics and this document (no token)."
    }
  ],
  "security": [
    {
      "bearerAuth": []
    }
  ],
  "paths": {
    "/v1/jobs": {
      "post": {
        "operationId": "submitJobs",
        "tags": [
          "jobs"
        ],
        "summary": "Validate jobs and produce them to the jobs topic",
        "description": "One fan-out job (docs/reference/job.md) or an array of 1 to 10000 jobs. Every job is validated as `pushworker enqueue` validates it (relative createdAt/expiresAt such as \"+4h\" are resolved); one invalid job and nothing is produced: 422 lists every problem with its JSON path (`$.recipients[3].token`, `$[2].content` in an array). Valid jobs are produced to their lane's topic keyed by jobId: `lane` `bulk` (the default) to PUSHWORKER_TOPIC_JOBS, `transactional` to PUSHWORKER_TOPIC_JOBS_TRANSACTIONAL (docs/lanes.md); 202 once Kafka acknowledged every one. With an Idempotency-Key, a retry with the same key and body gets the first 202 again (Idempotent-Replayed: true) without producing anything.",
        "parameters": [
          {
            "$ref": "#/components/parameters/IdempotencyKey"
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "oneOf": [
                  {
                    "$ref": "#/components/schemas/Job"
                  },
                  {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 10000,
                    "items": {
                      "$ref": "#/components/schemas/Job"
                    }
                  }
                ]
              },
              "example": {
                "schemaVersion": 1,
                "jobId": "order_shipped:0001",
                "appId": "app_demo",
                "campaignId": "order_shipped",
                "expiresAt": "+1d",
                "content": {
                  "defaultLanguage": "en",
                  "languages": {
                    "en": {
                      "title": "Your order is on its way",
                      "body": "It arrives tomorrow."
                    }
                  }
                },
                "recipients": [
                  {
                    "userId": "u10",
                    "subscriptionId": "ios-10",
                    "platform": "ios",
                    "token": "94a123a49f1f3a4ceac27050e47aeff4325e5b67ee0d2e575090e9f8d69bdfa3"
                  }
                ]
              }
            }
          }
        },
        "responses": {
          "202": {
            "description": "Every job was produced and acknowledged by Kafka.",
            "headers": {
              "Idempotent-Replayed": {
                "description": "`true` when this is the stored answer to an earlier request with the same Idempotency-Key.",
                "schema": {
                  "type": "string",
                  "enum": [
                    "true"
                  ]
                }
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/JobsAccepted"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "409": {
            "$ref": "#/components/responses/Conflict"
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "422": {
            "$ref": "#/components/responses/UnprocessableEntity"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/ServiceUnavailable"
          }
        }
      }
    },
    "/v1/campaigns/{app}/{campaign}": {
      "parameters": [
        {
          "$ref": "#/components/parameters/App"
        },
        {
          "$ref": "#/components/parameters/Campaign"
        }
      ],
      "get": {
        "operationId": "campaignStatus",
        "tags": [
          "campaigns"
        ],
        "summary": "A campaign's state, counts, rate, throttle, deadline and guardrail",
        "description": "A campaign nobody steered is `active` with `updatedAt` null. Counts are the final results of the last 7 days (they live as long as the control), by status.",
        "responses": {
          "200": {
            "description": "The campaign's status.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/CampaignStatus"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/ServiceUnavailable"
          }
        }
      }
    },
    "/v1/campaigns/{app}/{campaign}/pause": {
      "parameters": [
        {
          "$ref": "#/components/parameters/App"
        },
        {
          "$ref": "#/components/parameters/Campaign"
        }
      ],
      "post": {
        "operationId": "campaignPause",
        "tags": [
          "campaigns"
        ],
        "summary": "Pause a campaign",
        "description": "No new send anywhere in the fleet; its queued work waits and goes on when it is resumed. The optional reason is shown by status.",
        "requestBody": {
          "required": false,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ReasonBody"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The campaign's status after the change.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/CampaignStatus"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "409": {
            "$ref": "#/components/responses/Conflict"
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "422": {
            "$ref": "#/components/responses/UnprocessableEntity"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/ServiceUnavailable"
          }
        }
      }
    },
    "/v1/campaigns/{app}/{campaign}/resume": {
      "parameters": [
        {
          "$ref": "#/components/parameters/App"
        },
        {
          "$ref": "#/components/parameters/Campaign"
        }
      ],
      "post": {
        "operationId": "campaignResume",
        "tags": [
          "campaigns"
        ],
        "summary": "Resume a paused campaign",
        "description": "Sending goes on. Resuming a campaign the guardrail paused releases it from the guardrail for as long as its control lives.",
        "requestBody": {
          "required": false,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/EmptyBody"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The campaign's status after the change.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/CampaignStatus"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "409": {
            "$ref": "#/components/responses/Conflict"
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "422": {
            "$ref": "#/components/responses/UnprocessableEntity"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/ServiceUnavailable"
          }
        }
      }
    },
    "/v1/campaigns/{app}/{campaign}/cancel": {
      "parameters": [
        {
          "$ref": "#/components/parameters/App"
        },
        {
          "$ref": "#/components/parameters/Campaign"
        }
      ],
      "post": {
        "operationId": "campaignCancel",
        "tags": [
          "campaigns"
        ],
        "summary": "Cancel a campaign",
        "description": "No new send, ever: every recipient not sent yet gets the final status `cancelled`, and jobs of the campaign arriving while the control lives (7 days after its last change) are cancelled too. Cancelling a cancelled campaign is accepted (the reason is replaced).",
        "requestBody": {
          "required": false,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ReasonBody"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The campaign's status after the change.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/CampaignStatus"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "422": {
            "$ref": "#/components/responses/UnprocessableEntity"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/ServiceUnavailable"
          }
        }
      }
    },
    "/v1/campaigns/{app}/{campaign}/throttle": {
      "parameters": [
        {
          "$ref": "#/components/parameters/App"
        },
        {
          "$ref": "#/components/parameters/Campaign"
        }
      ],
      "put": {
        "operationId": "campaignThrottle",
        "tags": [
          "campaigns"
        ],
        "summary": "Set or remove a campaign's fleet-wide throttle",
        "description": "Sends per minute across the fleet; wins over the jobs' own throttlePerMinute. `null` removes it.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ThrottleBody"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The campaign's status after the change.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/CampaignStatus"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "409": {
            "$ref": "#/components/responses/Conflict"
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "422": {
            "$ref": "#/components/responses/UnprocessableEntity"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/ServiceUnavailable"
          }
        }
      }
    },
    "/v1/campaigns/{app}/{campaign}/deadline": {
      "parameters": [
        {
          "$ref": "#/components/parameters/App"
        },
        {
          "$ref": "#/components/parameters/Campaign"
        }
      ],
      "put": {
        "operationId": "campaignDeadline",
        "tags": [
          "campaigns"
        ],
        "summary": "Set or remove a campaign's deadline",
        "description": "Recipients not sent by this instant are `expired`; wins over the jobs' own sendBy. `null` removes it.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/DeadlineBody"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The campaign's status after the change.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/CampaignStatus"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "409": {
            "$ref": "#/components/responses/Conflict"
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "422": {
            "$ref": "#/components/responses/UnprocessableEntity"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/ServiceUnavailable"
          }
        }
      }
    },
    "/healthz": {
      "get": {
        "operationId": "healthz",
        "tags": [
          "operations"
        ],
        "summary": "Liveness",
        "description": "200 while the process runs.",
        "security": [],
        "responses": {
          "200": {
            "description": "The process runs.",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string",
                  "const": "ok\n"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          }
        }
      }
    },
    "/readyz": {
      "get": {
        "operationId": "readyz",
        "tags": [
          "operations"
        ],
        "summary": "Readiness: Redis and Kafka reachable",
        "description": "Redis answers PING and the Kafka cluster answers with the jobs topic (checked every 2 seconds).",
        "security": [],
        "responses": {
          "200": {
            "description": "Ready.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Readiness"
                }
              }
            }
          },
          "503": {
            "description": "Not ready: the failing dependencies, each with why.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Readiness"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          }
        }
      }
    },
    "/metrics": {
      "get": {
        "operationId": "metrics",
        "tags": [
          "operations"
        ],
        "summary": "Prometheus metrics",
        "description": "Prometheus text format 0.0.4 (docs/reference/metrics.md).",
        "security": [],
        "responses": {
          "200": {
            "description": "The metrics.",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          }
        }
      }
    },
    "/openapi.json": {
      "get": {
        "operationId": "openapi",
        "tags": [
          "operations"
        ],
        "summary": "This document",
        "description": "The OpenAPI 3.1 description of the API (also docs/reference/openapi.json).",
        "security": [],
        "responses": {
          "200": {
            "description": "The OpenAPI document.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "A token of PUSHWORKER_API_TOKENS_FILE."
      }
    },
    "parameters": {
      "App": {
        "name": "app",
        "in": "path",
        "required": true,
        "description": "The app id: `[A-Za-z0-9._-]+`, not `.` or `..`, at most 255 bytes.",
        "schema": {
          "type": "string",
          "pattern": "^[A-Za-z0-9._-]+$",
          "minLength": 1,
          "maxLength": 255
        }
      },
      "Campaign": {
        "name": "campaign",
        "in": "path",
        "required": true,
        "description": "The campaign id: 1 to 256 bytes of UTF-8, percent-encoded in the path.",
        "schema": {
          "type": "string",
          "minLength": 1,
          "maxLength": 256
        }
      },
      "IdempotencyKey": {
        "name": "Idempotency-Key",
        "in": "header",
        "required": false,
        "description": "1 to 255 visible ASCII characters. A retry with the same key and body gets the first answer again; another body under the same key is refused (422). Kept PUSHWORKER_API_IDEMPOTENCY_TTL_SECONDS (24 h), per token.",
        "schema": {
          "type": "string",
          "minLength": 1,
          "maxLength": 255,
          "pattern": "^[!-~]+$"
        }
      }
    },
    "schemas": {
      "Error": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "error"
        ],
        "description": "Every failure. `code` is fixed per kind of failure (see docs/reference/api.md, Errors); `field` names where the first problem is: a JSON path into the body, `app` or `campaign` for a path segment, or a header name; `problems` lists every problem of invalid jobs.",
        "properties": {
          "error": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "code",
              "message"
            ],
            "properties": {
              "code": {
                "type": "string",
                "enum": [
                  "not_found",
                  "method_not_allowed",
                  "unauthorized",
                  "body_too_large",
                  "unsupported_media_type",
                  "invalid_json",
                  "invalid_path",
                  "invalid_field",
                  "invalid_job",
                  "job_too_large",
                  "campaign_cancelled",
                  "invalid_idempotency_key",
                  "idempotency_key_reused",
                  "idempotency_key_in_use",
                  "redis_unavailable",
                  "kafka_unavailable",
                  "internal"
                ]
              },
              "message": {
                "type": "string"
              },
              "field": {
                "type": "string"
              },
              "problems": {
                "type": "array",
                "items": {
                  "$ref": "#/components/schemas/Problem"
                }
              }
            }
          }
        }
      },
      "Problem": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "field",
          "message"
        ],
        "properties": {
          "field": {
            "type": "string",
            "description": "Where: a JSON path into the body (`$.recipients[3].token`)."
          },
          "message": {
            "type": "string"
          }
        }
      },
      "Job": {
        "type": "object",
        "required": [
          "schemaVersion",
          "jobId",
          "appId",
          "campaignId",
          "content"
        ],
        "description": "A fan-out job v1: docs/reference/job.md and its JSON Schema topics/schemas/job.v1.schema.json. Only the outline is given here; the API checks every rule (422 with each problem's JSON path).",
        "properties": {
          "schemaVersion": {
            "type": "integer",
            "const": 1
          },
          "jobId": {
            "type": "string",
            "minLength": 1
          },
          "appId": {
            "type": "string",
            "pattern": "^[A-Za-z0-9._-]+$"
          },
          "campaignId": {
            "type": "string",
            "minLength": 1
          },
          "content": {
            "type": "object"
          },
          "recipients": {
            "type": [
              "array",
              "null"
            ],
            "items": {
              "type": "object"
            },
            "description": "Required unless `audience` is given (null counts as absent)."
          },
          "audience": {
            "type": [
              "object",
              "null"
            ],
            "description": "An FCM topic or condition instead of recipients."
          }
        },
        "additionalProperties": true
      },
      "JobsAccepted": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "jobs",
          "recipients",
          "topic",
          "jobIds",
          "warnings"
        ],
        "properties": {
          "jobs": {
            "type": "integer",
            "minimum": 1
          },
          "recipients": {
            "type": "integer",
            "minimum": 0
          },
          "topic": {
            "type": "string"
          },
          "jobIds": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "warnings": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Problem"
            },
            "description": "Remarks that did not stop a job: unknown fields, template variables without a value."
          }
        }
      },
      "CampaignStatus": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "appId",
          "campaignId",
          "state",
          "reason",
          "counts",
          "sendsPerMinute",
          "throttlePerMinute",
          "sendBy",
          "updatedAt",
          "guard"
        ],
        "properties": {
          "appId": {
            "type": "string"
          },
          "campaignId": {
            "type": "string"
          },
          "state": {
            "type": "string",
            "enum": [
              "active",
              "paused",
              "cancelled"
            ]
          },
          "reason": {
            "type": [
              "string",
              "null"
            ],
            "description": "Why it is paused or cancelled: an operator's note, or the guardrail's finding."
          },
          "counts": {
            "type": "object",
            "additionalProperties": {
              "type": "integer",
              "minimum": 0
            },
            "description": "Final results by status (sent, invalid_token, rejected, failed, expired, duplicate, cancelled, capped; 0 when none)."
          },
          "sendsPerMinute": {
            "type": "integer",
            "minimum": 0,
            "description": "`sent` results in the last 60 seconds, fleet-wide."
          },
          "throttlePerMinute": {
            "type": [
              "integer",
              "null"
            ],
            "minimum": 1
          },
          "sendBy": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time"
          },
          "updatedAt": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time",
            "description": "When the control last changed; null for a campaign never steered."
          },
          "guard": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "invalidShare",
              "minSends",
              "tripped",
              "released",
              "reason"
            ],
            "properties": {
              "invalidShare": {
                "type": "number",
                "minimum": 0,
                "maximum": 1
              },
              "minSends": {
                "type": "integer",
                "minimum": 0
              },
              "tripped": {
                "type": "boolean",
                "description": "The guardrail paused the campaign (and nobody resumed it since)."
              },
              "released": {
                "type": "boolean",
                "description": "An operator resumed a campaign the guardrail paused: the guardrail leaves it alone."
              },
              "reason": {
                "type": [
                  "string",
                  "null"
                ]
              }
            }
          }
        }
      },
      "ReasonBody": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "reason": {
            "type": [
              "string",
              "null"
            ],
            "maxLength": 1024,
            "description": "Shown by status; at most 1024 bytes."
          }
        }
      },
      "EmptyBody": {
        "type": "object",
        "additionalProperties": false,
        "properties": {}
      },
      "ThrottleBody": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "perMinute"
        ],
        "properties": {
          "perMinute": {
            "type": [
              "integer",
              "null"
            ],
            "minimum": 1,
            "maximum": 2147483647,
            "description": "Sends per minute across the fleet; null removes the throttle."
          }
        }
      },
      "DeadlineBody": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "sendBy"
        ],
        "properties": {
          "sendBy": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time",
            "description": "RFC 3339, after 1970-01-01T00:00:00Z; null removes the deadline."
          }
        }
      },
      "Readiness": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "ready"
        ],
        "properties": {
          "ready": {
            "type": "boolean"
          },
          "failing": {
            "type": "array",
            "items": {
              "type": "object",
              "additionalProperties": false,
              "required": [
                "dependency",
                "detail"
              ],
              "properties": {
                "dependency": {
                  "type": "string"
                },
                "detail": {
                  "type": "string"
                }
              }
            }
          }
        }
      }
    },
    "responses": {
      "BadRequest": {
        "description": "The body is not JSON (`invalid_json`), a path segment is invalid (`invalid_path`), or the Idempotency-Key is (`invalid_idempotency_key`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unauthorized": {
        "description": "No bearer token, or one that is not in PUSHWORKER_API_TOKENS_FILE.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "headers": {
          "WWW-Authenticate": {
            "required": true,
            "description": "`Bearer realm=\"pushworker\"` (with `error=\"invalid_token\"` when a token was refused).",
            "schema": {
              "type": "string"
            }
          }
        }
      },
      "NotFound": {
        "description": "No such endpoint.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "MethodNotAllowed": {
        "description": "The endpoint does not take this method.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "headers": {
          "Allow": {
            "required": true,
            "description": "The methods it takes.",
            "schema": {
              "type": "string"
            }
          }
        }
      },
      "Conflict": {
        "description": "The campaign is cancelled (`campaign_cancelled`: only cancel is accepted), or a request with this Idempotency-Key is still running (`idempotency_key_in_use`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "headers": {
          "Retry-After": {
            "description": "Seconds, for `idempotency_key_in_use`.",
            "schema": {
              "type": "string"
            }
          }
        }
      },
      "PayloadTooLarge": {
        "description": "The body is larger than PUSHWORKER_API_MAX_BODY (`body_too_large`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "UnsupportedMediaType": {
        "description": "The body is not application/json (`unsupported_media_type`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "UnprocessableEntity": {
        "description": "The body is JSON but not what the endpoint takes: `invalid_field`, `invalid_job` (every problem listed), `job_too_large`, `idempotency_key_reused`.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "InternalError": {
        "description": "An unexpected failure (`internal`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "ServiceUnavailable": {
        "description": "Redis or Kafka did not answer (`redis_unavailable`, `kafka_unavailable`); retry later.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "headers": {
          "Retry-After": {
            "description": "Seconds.",
            "schema": {
              "type": "string"
            }
          }
        }
      }
    }
  }
}
"""##
}
