/* The text of each measurement error class (error_class.h), from the same X-macro as the enum. */
#include "error_class.h"

const char *tc_error_class_str(int error_class) {
  switch (error_class) {
#define TC__ERROR_CLASS_CASE(name, num, text) \
  case num:                                   \
    return text;
    TC_ERROR_CLASSES(TC__ERROR_CLASS_CASE)
#undef TC__ERROR_CLASS_CASE
    default:
      return "unknown";
  }
}
