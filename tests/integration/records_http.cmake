# GET /records and POST /records against the real daemon: a tuned store's records carried to a fresh daemon
# whose first build applies them; bad bodies refused by line, nothing stored; reads private under --private.
foreach(case roundtrip bad_bodies private)
  th_integration_test(records_http_${case} TIMEOUT 600
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/records_http.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>;TH_RECORDS=${CMAKE_CURRENT_SOURCE_DIR}/data/records-h200-sm_90.jsonl")
endforeach()
