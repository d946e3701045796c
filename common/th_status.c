/* Tables generated from TH_STATUS_MAP: names, messages and HTTP codes. Out-of-range codes map to
 * "unknown" and 500 so that a corrupt value never indexes past the tables. */
#include "th_status.h"

const char *th_status_name(th_status s) {
  switch (s) {
#define TH__CASE(name, value, http, msg) \
  case name:                             \
    return #name;
    TH_STATUS_MAP(TH__CASE)
#undef TH__CASE
    default:
      return "TH_ERR_UNKNOWN";
  }
}

const char *th_status_str(th_status s) {
  switch (s) {
#define TH__CASE(name, value, http, msg) \
  case name:                             \
    return msg;
    TH_STATUS_MAP(TH__CASE)
#undef TH__CASE
    default:
      return "unknown error";
  }
}

int th_status_http(th_status s) {
  switch (s) {
#define TH__CASE(name, value, http, msg) \
  case name:                             \
    return http;
    TH_STATUS_MAP(TH__CASE)
#undef TH__CASE
    default:
      return 500;
  }
}
