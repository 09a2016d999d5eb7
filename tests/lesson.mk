# tests of src/lesson
