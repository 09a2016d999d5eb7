# tests of src/lesson: the parser, answers, quantities, ASCII fallback, progress, the shipped lessons
check_PROGRAMS += tests/unit/test_lesson
tests_unit_test_lesson_SOURCES = tests/unit/test_lesson.c
tests_unit_test_lesson_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_lesson_LDADD = $(UNIT_LIBS)
