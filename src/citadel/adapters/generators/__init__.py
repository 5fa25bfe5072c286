"""Answer generators: candidate writers behind the AnswerGenerator port."""
